"""The bf16 dense peak where the catalog lists only the fp16 tensor peak (catalog.hardware BF16_AT_FP16_RATE).

NVIDIA's Ampere GA100 whitepaper (A100: BF16 and FP16 tensor 312 TFLOP/s dense) and GA102 whitepaper (RTX 3090:
'Peak BF16 Tensor TFLOPS with FP32 Accumulate' 71 = 'Peak FP16 Tensor TFLOPS with FP32 Accumulate' 71) give one
rate for both on Ampere tensor cores; Ada, Hopper and Blackwell datasheets the same. The A10G (AWS G5) has no NVIDIA
datasheet: the catalog lists its fp16 tensor peak, 62.5 TFLOP/s, only.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from trainplan import catalog
from trainplan.catalog.hardware import BF16_AT_FP16_RATE
from trainplan.catalog.store import DATA_DIR
from trainplan.cli import main

T = 1e12


def test_every_listed_pair_of_these_generations_is_equal():
    """The rule rests on the data: each NVIDIA GPU of a BF16_AT_FP16_RATE generation that lists both peaks lists
    them equal (57 such rows at the time of writing), and the rule derives a peak for the A10G alone."""
    rows = tomllib.loads((Path(DATA_DIR) / "gpus.toml").read_text(encoding="utf-8"))["gpu"]
    ours = [r for r in rows if r["vendor"] == "NVIDIA" and r.get("generation") in BF16_AT_FP16_RATE]
    both = [r for r in ours if {"bf16", "fp16"} <= set(r.get("peak_tflops", {}))]
    assert len(both) >= 57
    assert all(r["peak_tflops"]["bf16"] == r["peak_tflops"]["fp16"] for r in both)
    assert [r["id"] for r in ours if "bf16" not in r.get("peak_tflops", {})] == ["a10g"]


def test_a10g_bf16_runs_on_its_tensor_cores():
    gpu = catalog.resolve_gpu("a10g")
    assert gpu.peak_flops("bf16") == pytest.approx(62.5 * T)
    assert gpu.supports("bf16")
    assert "bf16 dense peak = its fp16 tensor peak (62.5 TFLOP/s)" in gpu.notes


def test_turing_and_volta_keep_no_bf16():
    for gpu_id in ("t4", "v100-sxm2-16gb", "rtx2080ti"):
        assert catalog.resolve_gpu(gpu_id).peak_flops("bf16") is None


def test_a10g_estimate_has_no_emulation_note(capsys):
    assert main(["estimate", "--model", "llama-3.2-1b", "--gpu", "a10g", "--method", "lora", "--seq-len", "512",
                 "--batch-size", "1"]) == 0
    out = capsys.readouterr().out
    assert "no bf16 tensor cores" not in out and "emulated" not in out
