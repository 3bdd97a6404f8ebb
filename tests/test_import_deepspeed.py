"""`--from` a DeepSpeed JSON on its own: the fields each config resolves to, the keys that matter but
are not modelled, one-line errors, and the same estimate as the equivalent flags. Keys and defaults:
deepspeed runtime/config.py, runtime/zero/config.py, runtime/zero/offload_config.py (the DeepSpeed
section of shared/reference/framework_configs.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import estimate_json as est
from trainplan.cli import main
from trainplan.errors import TrainplanError
from trainplan.importers import read_config
from trainplan.importers.base import Origin

HERE = Path(__file__).parent / "fixtures" / "configs" / "deepspeed"
Z3_OFFLOAD = HERE / "zero3_offload.json"           # HF's ds_config_zero3.json shape, "auto" values
Z2 = HERE / "zero2_standalone.json"                # the batch triple, AdamW, bf16, ZeRO-2
Z3_SP = HERE / "ds_z3_ulysses_zeropp.json"         # Ulysses, NVMe partial offload, ZeRO++, Muon


def test_zero3_offload_with_auto_values():
    imported = read_config(str(Z3_OFFLOAD))
    assert imported.format == "deepspeed"
    assert imported.values() == {
        "framework": "deepspeed", "zero": 3, "offload": "all", "offload_device": "cpu",
        "reduce_bucket_size": "auto", "prefetch_bucket_size": "auto", "param_persistence_threshold": "auto",
        "max_live_parameters": 1_000_000_000, "overlap_comm": False}
    assert imported.unread == ()
    # the batch triple and bf16 left to "auto" (4), steps_per_print, gradient_clipping, wall_clock_breakdown,
    # contiguous_gradients, sub_group_size, stage3_max_reuse_distance, gather_16bit_weights_on_model_save
    assert imported.ignored == 11


def test_zero2_batch_triple_names_the_data_parallel_width():
    imported = read_config(str(Z2))
    v = imported.values()
    assert (v["zero"], v["batch_size"], v["grad_accum"], v["precision"], v["optimizer"]) == (2, 4, 8, "bf16",
                                                                                             "adamw-fused")
    assert v["num_gpus"] == 256 // (4 * 8)                      # train_batch_size = micro x accum x dp
    assert (v["reduce_bucket_size"], v["overlap_comm"]) == (200_000_000, True)
    derived = next(s for s in imported.settings if s.field == "num_gpus")
    assert derived.origin is Origin.DERIVED and derived.key == "train_batch_size"


def test_ulysses_and_what_is_not_modelled():
    imported = read_config(str(Z3_SP))
    v = imported.values()
    assert (v["ulysses"], v["zero"], v["offload"], v["offload_device"]) == (4, 3, "optimizer", "nvme")
    assert (v["prefetch_bucket_size"], v["param_persistence_threshold"]) == (50_000_000, 100_000)
    unread = {u.key: u.why for u in imported.unread}
    assert set(unread) == {"optimizer.type", "zero_optimization.offload_optimizer.ratio",
                           "zero_optimization.zero_quantized_weights", "zero_optimization.zero_hpz_partition_size",
                           "activation_checkpointing"}
    assert "ZeRO++" in unread["zero_optimization.zero_quantized_weights"]
    assert all(u.file == str(Z3_SP) for u in imported.unread)


def test_same_estimate_as_the_flags(capsys):
    a = est(capsys, "--model", "llama-3.1-8b", "--gpu", "h100", "--num-gpus", "8", "--from", str(Z3_OFFLOAD))
    b = est(capsys, "--model", "llama-3.1-8b", "--gpu", "h100", "--num-gpus", "8", "--framework", "deepspeed",
            "--zero", "3", "--offload", "all", "--offload-device", "cpu", "--reduce-bucket-size", "auto",
            "--prefetch-bucket-size", "auto", "--param-persistence-threshold", "auto",
            "--max-live-parameters", "1000000000", "--no-overlap-comm")
    assert a["memory"] == b["memory"] and a["time"]["step_s"] == b["time"]["step_s"]
    c = est(capsys, "--model", "llama-3.1-8b", "--gpu", "h100", "--from", str(Z2))
    d = est(capsys, "--model", "llama-3.1-8b", "--gpu", "h100", "--framework", "deepspeed", "--zero", "2",
            "--num-gpus", "8", "--batch-size", "4", "--grad-accum", "8", "--precision", "bf16", "--optimizer",
            "adamw-fused", "--reduce-bucket-size", "200000000", "--overlap-comm")
    assert c["memory"] == d["memory"] and c["time"]["step_s"] == d["time"]["step_s"]
    assert c["setup"]["num_gpus"] == 8 and c["setup"]["zero"] == 2


def test_a_flag_wins_and_says_what_it_overrode(capsys):
    out = est(capsys, "--model", "llama-3.1-8b", "--gpu", "h100", "--from", str(Z2), "--zero", "3")
    assert out["setup"]["zero"] == 3
    zero = next(s for s in out["setup"]["sources"] if s["field"] == "zero")
    assert zero["origin"] == "flag" and "zero_optimization.stage=2" in zero["note"] and str(Z2) in zero["note"]


@pytest.mark.parametrize("text, words", [
    ('{"zero_optimization": {"stage": "three"}}', "zero_optimization.stage must be an integer"),
    ('{"zero_optimization": {"stage": 3}, "train_micro_batch_size_per_gpu": 0}',
     "train_micro_batch_size_per_gpu must be at least 1"),
    ('{"zero_optimization": {"stage": 2, "overlap_comm": "sometimes"}}', "overlap_comm must be true or false"),
    ('{"zero_optimization": {"stage": 2}, "bf16": {"enabled": "yes please"}}', "bf16.enabled must be true or false"),
])
def test_bad_values_are_one_line_naming_file_and_key(tmp_path, capsys, text, words):
    path = tmp_path / "ds.json"
    path.write_text(text)
    with pytest.raises(TrainplanError, match=words):
        read_config(str(path))
    assert main(["estimate", "--model", "llama-3.1-8b", "--from", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err


def test_batch_total_that_does_not_divide_is_listed(tmp_path):
    path = tmp_path / "ds.json"
    path.write_text('{"train_batch_size": 100, "train_micro_batch_size_per_gpu": 3, "zero_optimization": {"stage": 1}}')
    imported = read_config(str(path))
    assert "num_gpus" not in imported.values()
    assert {u.key for u in imported.unread} == {"train_batch_size"}
