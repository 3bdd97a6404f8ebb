"""ms-swift deletes a sample longer than max_length instead of truncating it (truncation_strategy 'delete':
ms-swift 1.x SftArguments, 3.x template_args.py): the lengths trained on are the ones that fit, and only their
share of the dataset counts towards the steps (timing.steps.sequence_shape drop_long)."""

from __future__ import annotations

import pytest

from trainplan.cases.common import lora_targets
from trainplan.cases.trainers import drops_long_samples
from trainplan.enums import Framework
from trainplan.job.options import JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.timing.estimate import estimate_time
from trainplan.timing.steps import sequence_shape

LENGTHS = (100, 300, 500, 900, 1500, 3000)


def test_deleted_samples_leave_the_ones_that_fit():
    # max 1024: 100, 300, 500, 900 fit (4 of 6); their mean 450; one per micro-batch, no padding
    dropped = sequence_shape(seq_len=1024, micro_batch=1, tokens_per_sample=None, packing=False, lengths=LENGTHS,
                             drop_long=True)
    assert dropped.kept == pytest.approx(4 / 6) and dropped.real_tokens == pytest.approx(450.0)
    assert dropped.note.startswith("samples longer than 1024 tokens deleted, not truncated")
    # truncated instead: 100, 300, 500, 900, 1024, 1024: mean 641.3, every sample kept
    cut = sequence_shape(seq_len=1024, micro_batch=1, tokens_per_sample=None, packing=False, lengths=LENGTHS)
    assert cut.kept == 1.0 and cut.real_tokens == pytest.approx(3848 / 6)
    # nothing over the cap: the same shape either way
    assert sequence_shape(seq_len=4096, micro_batch=1, tokens_per_sample=None, packing=False, lengths=LENGTHS,
                          drop_long=True).kept == 1.0


def test_swift_deletes_by_default_and_counts_only_what_is_kept(tmp_path):
    lengths = tmp_path / "lengths.txt"
    lengths.write_text("\n".join(str(x) for x in LENGTHS) + "\n")
    base = dict(model="qwen2.5-0.5b", gpu="a100-80gb", method="lora", seq_len=1024, samples=600, grad_accum=1,
                lengths_file=str(lengths))
    swift = resolve_job(JobOptions(**base, framework="swift"), calibration=None, priced=False)
    hf = resolve_job(JobOptions(**base, framework="hf"), calibration=None, priced=False)
    assert swift.timing.drop_long_samples is True and hf.timing.drop_long_samples is False
    t_swift = estimate_time(swift.setup, swift.layout, swift.gpu, swift.workload, swift.timing)
    t_hf = estimate_time(hf.setup, hf.layout, hf.gpu, hf.workload, hf.timing)
    # 600 samples, 4 of 6 kept: 400 steps of one sample; truncated: 600
    assert (t_swift.steps, t_hf.steps) == (400, 600)
    off = resolve_job(JobOptions(**base, framework="swift", drop_long_samples=False), calibration=None, priced=False)
    assert off.timing.drop_long_samples is False


def test_a_case_states_its_truncation():
    case = {"framework": "ms-swift swift sft --truncation_strategy left"}
    assert drops_long_samples(case, Framework.SWIFT) is False
    assert drops_long_samples({"framework": "ms-swift swift sft"}, Framework.SWIFT) is True
    assert drops_long_samples({"framework": "LLaMA-Factory"}, Framework.LLAMAFACTORY) is False


def test_a_case_keeps_the_case_of_its_target_names():
    # peft matches module names exactly: Baichuan's fused projection is W_pack, not w_pack
    assert lora_targets({"lora": {"targets": "W_pack"}})[0] == ("W_pack",)
    assert lora_targets({"lora": {"targets": "q_proj, V_proj"}})[0] == ("q_proj", "V_proj")
    assert lora_targets({"lora": {"targets": "DEFAULT (c_attn)"}})[0] == ()
    assert lora_targets({"lora": {"targets": "ALL"}})[0] == ("all-linear",)
