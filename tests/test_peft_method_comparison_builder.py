"""tools/build_peft_method_comparison_cases.py: the step times and sample length derived by hand from the results
files of huggingface/peft method_comparison/MetaMathQA @51c2ff66, the file in benchmarks/data being what the builder
writes, and the case reader taking each case as the run was (run.py: a plain PyTorch loop over a bf16 model)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from trainplan.cases import map_case
from trainplan.enums import Framework, GradCkpt, Method, Precision

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import build_peft_method_comparison_cases as builder  # noqa: E402

DATA = json.loads((ROOT / "benchmarks" / "data" / "peft_method_comparison_cases.json").read_text(encoding="utf-8"))
BY_ID = {c["id"]: c for c in DATA["cases"]}


def test_the_file_is_what_the_builder_writes():
    assert DATA == {"about": builder.ABOUT, "cases": builder.cases()}
    assert len(DATA["cases"]) == len(builder.ROWS) == 6


def test_sample_length_and_step_times_by_hand():
    # (4,198,051 train total tokens - 20,000 EOS the script adds a sample) / 20,000 samples = 208.90 -> 209
    assert builder.SEQ == 209
    # LoRA r32: the 20 windows' train time sum to 585.191 s over 5,000 steps -> 0.117038 s a step
    assert BY_ID["peft-mc-llama-3.2-3B-rank32"]["measured"]["step_time_s"] == pytest.approx(0.117038)
    # the full fine-tune: 1,812.971 s / 5,000 = 0.362594 s
    assert BY_ID["peft-mc-llama-3.2-3B-lr_0.00001-full"]["measured"]["step_time_s"] == pytest.approx(0.362594)


@pytest.mark.parametrize("case_id, method, targets, dora", [
    ("peft-mc-llama-3.2-3B-lr_0.00001-full", Method.FULL, (), False),
    ("peft-mc-llama-3.2-3B-rank32", Method.LORA, ("q_proj", "v_proj"), False),
    ("peft-mc-llama-3.2-3B-rank10-target-mlp", Method.LORA, ("down_proj", "gate_proj", "up_proj"), False),
    ("peft-mc-llama-3.2-3B-rank32-dora", Method.LORA, ("q_proj", "v_proj"), True),
])
def test_each_case_reads_as_the_run(case_id, method, targets, dora):
    job = map_case(BY_ID[case_id]).job
    setup = job.setup
    assert setup.framework is Framework.PYTORCH          # "plain PyTorch loop": run.py's own loop, no Trainer
    assert setup.precision is Precision.BF16_PURE        # dtype bfloat16, use_amp false
    assert setup.method is method and setup.grad_ckpt is GradCkpt.NONE
    assert (setup.batch_size, setup.seq_len, setup.grad_accum, job.layout.num_gpus) == (4, 209, 1, 1)
    assert job.gpu.id == "l40s"
    if method is Method.LORA:
        assert tuple(sorted(setup.lora.targets)) == targets and setup.lora.dora is dora
