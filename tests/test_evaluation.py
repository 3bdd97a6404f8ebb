"""Periodic evaluation as part of the run (`--val-size`, `--eval-steps`, `--eval-each-epoch`; timing.estimate
evaluation_share), and `--from` reading it from HF TrainingArguments and LLaMA-Factory configs. Values by hand:

transformers 5.25 evaluates at every step where global_step % eval_steps == 0 and at the last step when that is not
one of them (trainer_callback.py DefaultFlowCallback), a fractional eval_steps being ceil(max_steps x eval_steps)
(TrainerState.compute_steps); under eval_strategy "epoch", at the end of each epoch. LLaMA-Factory holds val_size out
of the dataset: a count above 1, else train_test_split's share (data/data_utils.py split_dataset)."""

from __future__ import annotations

import json

import pytest

from conftest import estimate_json as est
from conftest import options_from as options
from trainplan.errors import TrainplanError

RUN = ("--model", "llama-3.2-1b", "--method", "lora", "--gpu", "a100-80gb", "--seq-len", "512", "--batch-size", "4",
       "--grad-accum", "2", "--samples", "1000")     # 8 samples a step: 125 steps an epoch


def _notes(out: dict) -> str:
    return " | ".join(out["time"]["assumptions"])


def _read(tmp_path, name: str, text: str):
    """The options `--from` reads from a config file `name` holding `text`."""
    path = tmp_path / name
    path.write_text(text)
    return options(path)


def test_evaluations_every_n_steps_are_their_share_of_the_samples(capsys):
    # ceil(125 / 50) = 3 evaluations (steps 50, 100 and the last, 125) of 200 samples: 600 / (125 x 8) = 0.6 of the
    # samples trained, the same time --eval-fraction 0.6 adds
    periodic = est(capsys, *RUN, "--val-size", "200", "--eval-steps", "50")
    direct = est(capsys, *RUN, "--eval-fraction", "0.6")
    assert "3 evaluations of 200 held-out samples (every 50 steps)" in _notes(periodic)
    assert "60.0% of the samples trained" in _notes(periodic)
    assert periodic["time"]["eval_s"] == pytest.approx(direct["time"]["eval_s"])
    assert periodic["time"]["train_s"] == pytest.approx(direct["time"]["train_s"])


def test_a_share_of_the_run_and_each_epoch(capsys):
    # eval_steps 0.25 of 125 steps: ceil(31.25) = 32, so ceil(125 / 32) = 4 evaluations
    assert "4 evaluations of 200 held-out samples (every 32 steps)" in _notes(
        est(capsys, *RUN, "--val-size", "200", "--eval-steps", "0.25"))
    # 2.5 epochs of 125 steps = 313 steps: the ends of epochs 1, 2 and of the cut-short third, 3 evaluations
    assert "3 evaluations of 200 held-out samples (after each epoch)" in _notes(
        est(capsys, *RUN, "--epochs", "2.5", "--val-size", "200", "--eval-each-epoch"))


def test_a_share_held_out_of_the_dataset_is_not_trained_on(capsys):
    # alpaca-cleaned: 51,760 samples; 10% held out: ceil(5,176.0) = 5,176, so 46,584 trained: ceil(46584 / 8) = 5,823
    out = est(capsys, *RUN[:-2], "--dataset", "alpaca", "--val-size", "0.1", "--eval-each-epoch")
    assert out["time"]["steps"] == 5823
    assert "1 evaluation of 5,176 held-out samples" in _notes(out)


def test_a_share_of_samples_trained_and_nothing_known(capsys):
    # --samples are the samples trained; a 0.2 share held out beside them is 1000 x 0.2 / 0.8 = 250
    assert "of 250 held-out samples" in _notes(est(capsys, *RUN, "--val-size", "0.2", "--eval-steps", "125"))
    # without a size a share holds out an unknown number: said, not counted
    out = est(capsys, *RUN[:-2], "--max-steps", "10", "--val-size", "0.2", "--eval-steps", "5")
    assert out["time"]["eval_s"] == 0 and "evaluation not counted" in _notes(out)


@pytest.mark.parametrize("args, expected", [
    ({"eval_strategy": "steps", "eval_steps": 200}, {"eval_steps": 200.0}),
    ({"eval_strategy": "steps", "logging_steps": 25}, {"eval_steps": 25.0}),        # eval_steps unset: logging_steps
    ({"eval_strategy": "steps"}, {"eval_steps": 500.0}),                            # logging_steps' default
    ({"evaluation_strategy": "epoch"}, {"eval_each_epoch": True}),                  # the transformers 4 name
    ({"eval_strategy": "no", "eval_steps": 200}, {}),
])
def test_hf_training_arguments_evaluation(tmp_path, args, expected):
    got = _read(tmp_path, "args.json", json.dumps({"per_device_train_batch_size": 2, "bf16": True, **args}))
    assert {k: getattr(got, k) for k in ("eval_steps", "eval_each_epoch")} == \
        {"eval_steps": None, "eval_each_epoch": False, **expected}


def test_hf_refuses_an_unknown_strategy(tmp_path):
    with pytest.raises(TrainplanError, match="eval_strategy must be no, steps or epoch"):
        _read(tmp_path, "args.json", '{"per_device_train_batch_size": 2, "eval_strategy": "sometimes"}')


@pytest.mark.parametrize("val, expected", [("0.1", 0.1), ("200", 200.0), ("0", None)])
def test_llamafactory_val_size(tmp_path, val, expected):
    got = _read(tmp_path, "sft.yaml", "model_name_or_path: meta-llama/Llama-3.2-1B\nstage: sft\nfinetuning_type: lora\n"
                f"dataset: alpaca_en\nval_size: {val}\neval_strategy: steps\neval_steps: 100\n")
    assert (got.val_size, got.eval_steps) == (expected, 100.0)


def test_the_evaluation_note_in_chinese(capsys):
    from trainplan.cli import main
    assert main(["estimate", *RUN, "--val-size", "200", "--eval-steps", "50", "--lang", "zh"]) == 0
    assert "评估：3 次，每次 200 个留出样本（每 50 步），只做前向：占训练样本的 60.0%" in capsys.readouterr().out


@pytest.mark.parametrize("extra, expected", [
    # split_dataset_ratio held out; eval_strategy defaults to save_strategy (steps), eval_steps to save_steps
    ("--split_dataset_ratio 0.01 --save_steps 50", (0.01, 50.0, False)),
    ("--split_dataset_ratio 0.01", (0.01, 500.0, False)),                       # HF's save_steps default
    ("--split_dataset_ratio 0.01 --eval_strategy epoch", (0.01, None, True)),
    ("--split_dataset_ratio 0.01 --save_strategy no", (0.01, None, False)),
    ("--save_steps 50", (None, None, False)),                                   # ms-swift's default ratio is 0
])
def test_ms_swift_split_dataset_ratio(tmp_path, extra, expected):
    got = _read(tmp_path, "sft.sh", "swift sft --model Qwen/Qwen2.5-7B-Instruct --train_type lora --dataset "
                f"AI-ModelScope/alpaca-gpt4-data-en --per_device_train_batch_size 1 {extra}\n")
    assert (got.val_size, got.eval_steps, got.eval_each_epoch) == expected


@pytest.mark.parametrize("extra, expected", [
    # evals_per_epoch 4 over 2 epochs: eval_steps = 1 / 8 of the run (axolotl normalize_config)
    ("val_set_size: 0.05\nevals_per_epoch: 4\nnum_epochs: 2\n", (0.05, 0.125, False)),
    ("val_set_size: 0.05\neval_steps: 100\n", (0.05, 100.0, False)),
    ("val_set_size: 0.05\n", (0.05, None, True)),                     # a held-out set, no steps: each epoch
    ("val_set_size: 0.05\neval_strategy: steps\nlogging_steps: 10\n", (0.05, 10.0, False)),
    ("evals_per_epoch: 4\n", (None, None, False)),                    # nothing held out: no evaluation
])
def test_axolotl_val_set_size(tmp_path, extra, expected):
    got = _read(tmp_path, "axolotl.yaml", "base_model: meta-llama/Llama-3.2-1B\nadapter: lora\nlora_r: 8\n"
                f"sequence_len: 1024\nmicro_batch_size: 2\n{extra}")
    assert (got.val_size, got.eval_steps, got.eval_each_epoch) == expected
