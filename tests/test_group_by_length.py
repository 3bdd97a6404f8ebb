"""The HF Trainer's length-grouped sampler (--group-by-length; TrainingArguments.group_by_length, transformers 5
train_sampling_strategy "group_by_length").

transformers trainer.py _get_train_sampler builds LengthGroupedSampler(per-device batch x accumulation);
trainer_pt_utils.get_length_grouped_indices permutes the samples, cuts mega-batches of mult x that batch
(mult = min(n // (4 batch), 50)) and sorts each longest first; the loader takes micro-batches of consecutive
samples. timing.steps.grouped_batch_max takes each micro-batch's longest sample at its order statistic's expected
quantile, the mega-batch's longest exactly.
"""

from __future__ import annotations

import math
import random

import pytest

from trainplan.api import estimate
from trainplan.timing.steps import grouped_batch_max, sequence_shape


def test_hand_value_on_uniform_lengths():
    lengths = tuple(range(1, 1001))           # 1..1000 tokens, one sample each
    # micro-batch 4, no accumulation: mult = min(1000 // 16, 50) = 50, mega-batches of 200, 50 micro-batches each
    longest = sum(1 - (t / 1000) ** 200 for t in range(1000))       # E[max of 200 draws] = sum_t P(max > t)
    rest = sum(math.ceil(1000 * (200 - 4 * k) / 201) for k in range(1, 50))
    assert grouped_batch_max(lengths, 4, 4) == pytest.approx((longest + rest) / 50, rel=1e-12)
    assert round((longest + rest) / 50, 1) == 508.0        # against 800.5 for four random samples a micro-batch


def test_one_sample_a_micro_batch_pads_nothing():
    lengths = (10, 20, 30, 400)
    assert grouped_batch_max(lengths, 1, 8) == sum(lengths) / 4


def _hf_sampler_mean_max(lengths: list[int], micro_batch: int, group: int, rounds: int, seed: int) -> float:
    """transformers' get_length_grouped_indices, as its docstring and code say, with the loader's micro-batches."""
    rng = random.Random(seed)
    mult = max(1, min(len(lengths) // (4 * group), 50))
    mega = mult * group
    total = count = 0
    for _ in range(rounds):
        order = list(range(len(lengths)))
        rng.shuffle(order)
        for start in range(0, len(order) - mega + 1, mega):
            ranked = sorted((lengths[i] for i in order[start:start + mega]), reverse=True)
            for k in range(0, mega, micro_batch):
                total += ranked[k]
                count += 1
    return total / count


@pytest.mark.parametrize("shape", ["uniform", "lognormal"])
@pytest.mark.parametrize("micro_batch, accum", [(2, 1), (4, 4), (16, 1)])
def test_within_two_and_a_half_percent_of_the_sampler_itself(shape, micro_batch, accum):
    rng = random.Random(7)
    lengths = [rng.randint(1, 1000) if shape == "uniform" else max(1, min(4096, int(rng.lognormvariate(5.5, 0.9))))
               for _ in range(4000)]
    simulated = _hf_sampler_mean_max(lengths, micro_batch, micro_batch * accum, rounds=10, seed=3)
    assert grouped_batch_max(tuple(lengths), micro_batch, micro_batch * accum) == pytest.approx(simulated, rel=0.025)


def test_the_shape_and_the_estimate_follow_it():
    lengths = tuple(range(1, 1001))
    grouped = sequence_shape(seq_len=2048, micro_batch=4, tokens_per_sample=None, packing=False, lengths=lengths,
                             group=4)
    plain = sequence_shape(seq_len=2048, micro_batch=4, tokens_per_sample=None, packing=False, lengths=lengths)
    assert grouped.real_tokens == plain.real_tokens == 500.5
    assert grouped.padded_len < plain.padded_len
    assert grouped.note.startswith("batches grouped by length (group_by_length)")
    job = {"model": "llama-3.1-8b", "gpu": "h100", "method": "lora", "batch_size": 8, "dataset": "alpaca"}
    assert estimate(**job, group_by_length=True).time.step_s < estimate(**job).time.step_s


@pytest.mark.parametrize("name, text", [
    ("args.yaml", "model_name_or_path: meta-llama/Llama-3.1-8B\nbf16: true\ngroup_by_length: true\n"),
    ("args5.yaml", "model_name_or_path: meta-llama/Llama-3.1-8B\nbf16: true\n"
                   "train_sampling_strategy: group_by_length\n"),
    ("lf.yaml", "model_name_or_path: meta-llama/Llama-3.1-8B\nstage: sft\nfinetuning_type: lora\n"
                "dataset: alpaca_en_demo\ncutoff_len: 2048\ngroup_by_length: true\n"),
    ("axolotl.yaml", "base_model: meta-llama/Llama-3.1-8B\ngroup_by_length: true\nsequence_len: 2048\n"
                     "micro_batch_size: 8\ndatasets:\n  - path: tatsu-lab/alpaca\n    type: alpaca\n"),
    ("train.sh", "swift sft --model Qwen/Qwen2.5-7B-Instruct --train_type lora --group_by_length true "
                 "--dataset alpaca --max_length 2048\n"),
])
def test_configs_read_it(tmp_path, name, text):
    from trainplan.importers import read_config

    path = tmp_path / name
    path.write_text(text)
    assert read_config(str(path)).values()["group_by_length"] is True


@pytest.mark.parametrize("fmt", ["hf", "llamafactory", "swift", "axolotl"])
def test_exports_write_it_and_read_it_back(tmp_path, fmt):
    from trainplan.cli import main
    from trainplan.importers import read_config

    out = tmp_path / fmt
    assert main(["export", "--model", "llama-3.1-8b", "--method", "lora", "--batch-size", "8", "--dataset", "alpaca",
                 "--group-by-length", "--framework", fmt, "--format", fmt, "--out", str(out)]) == 0
    path = next(p for p in out.iterdir() if p.suffix in (".yaml", ".json"))
    assert read_config(str(path)).values()["group_by_length"] is True


def test_case_text():
    from trainplan.cases.text import embedded_settings

    assert embedded_settings("HF Trainer, group_by_length=True")[0] == {"group_by_length": True}


def test_nothing_to_group_without_lengths_is_said():
    shape = sequence_shape(seq_len=2048, micro_batch=8, tokens_per_sample=None, packing=False, group=8)
    assert shape.padded_len == 2048 and "group_by_length has no lengths to group" in shape.note


def test_batch_rebalance_is_said_not_modelled(tmp_path):
    from trainplan.importers import read_config

    path = tmp_path / "args.yaml"
    path.write_text("model_name_or_path: meta-llama/Llama-3.1-8B\nbf16: true\ntrain_sampling_strategy: batch_rebalance\n")
    imported = read_config(str(path))
    assert "group_by_length" not in imported.values()
    assert "train_sampling_strategy" in {u.key for u in imported.unread}
