"""Megatron's communication overlap (trainplan.timing.overlap): what it hides, by hand."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from trainplan.cases import map_case
from trainplan.job.training import Layout
from trainplan.timing.comm import CommTimes
from trainplan.timing.overlap import megatron_overlap

COMM = CommTimes(dp_s=0.8, dp_exposed_s=0.5, gather_s=0.4, gather_exposed_s=0.4, tp_s=1.0, pp_s=0.2)


def test_tp_dp_and_pipeline_overlap_by_hand():
    notes: list[str] = []
    out = megatron_overlap(COMM, Layout(num_gpus=64, tp=4, pp=4), layers_stage=20, virtual_stages=5,
                           fwd_s=0.1, bwd_s=0.3, tp_dp=True, notes=notes)
    # TP: one chunk of 4 exposed, 1.0 / 4; pipeline sends hidden under interleaved compute (5 virtual stages);
    # DP in 5 chunks (one per virtual stage): reduction max(0, 0.8 - 0.3) + 0.8 / 5 = 0.66 > 0.5 without
    # overlap, so 0.5 stays; all-gather max(0, 0.4 - 0.1) + 0.4 / 5 = 0.38
    assert (out.tp_hidden_s, out.pp_hidden_s) == (pytest.approx(0.75), 0.2)
    assert out.dp_exposed_s == pytest.approx(0.5) and out.gather_exposed_s == pytest.approx(0.38)
    assert out.exposed_s == pytest.approx(0.5 + 0.38 + 0.25 + 0.0)
    assert any("Megatron communication overlap" in n for n in notes)


def test_only_the_pipeline_sends_without_the_recipes_overlap():
    # Megatron-LM's own default: overlap_p2p_comm with virtual stages, nothing else
    out = megatron_overlap(COMM, Layout(num_gpus=64, tp=4, pp=4), layers_stage=20, virtual_stages=5,
                           fwd_s=0.1, bwd_s=0.3, tp_dp=False, notes=[])
    assert (out.tp_hidden_s, out.pp_hidden_s, out.dp_exposed_s, out.gather_exposed_s) == (0.0, 0.2, 0.5, 0.4)
    plain = megatron_overlap(COMM, Layout(num_gpus=64, tp=4, pp=4), layers_stage=20, virtual_stages=1,
                             fwd_s=0.1, bwd_s=0.3, tp_dp=False, notes=[])
    assert plain.pp_hidden_s == 0.0                  # 1F1B: batched sends, exposed
    assert plain.serialised().exposed_s == COMM.serialised().exposed_s


def test_nemo_and_megatron_bridge_runs_overlap_megatron_lm_does_not():
    case = {"id": "x", "kind": "time", "model": {"name": "Llama-2-70B", "hf_id": "meta-llama/Llama-2-70b-hf"},
            "method": "pretrain", "precision": {"compute": "bf16"}, "optimizer": "Adam", "micro_batch": 1,
            "global_batch": 128, "seq_len": 4096, "grad_ckpt": None, "attention": None,
            "gpus": {"type": "H100 SXM", "count": 64}, "parallel": {"tp": 4, "pp": 4, "other": "VP=20"},
            "framework": "NeMo 24.07 container", "measured": {"tokens_per_s_per_gpu": 1707},
            "source": {"repo": "example/x"}}
    assert map_case(case).job.setup.impl.comm_overlap
    assert map_case({**case, "framework": "Megatron-Bridge 25.11"}).job.setup.impl.comm_overlap
    assert not map_case({**case, "framework": "Megatron-LM pretrain_gpt.py"}).job.setup.impl.comm_overlap


def _estimate(*flags: str) -> dict:
    out = subprocess.run([sys.executable, "-m", "trainplan", "estimate", "--model", "llama-2-70b", "--method", "full",
                          "--framework", "megatron", "--gpu", "h100-sxm", "--num-gpus", "16", "--nodes", "2", "--tp", "4",
                          "--pp", "4", "--zero", "1", "--batch-size", "1", "--grad-accum", "16", "--seq-len", "4096",
                          "--json", *flags], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)["time"]


def test_the_flag_hides_what_it_says():
    on, off = _estimate("--comm-overlap"), _estimate()
    assert on["breakdown_s"]["communication_s"] < off["breakdown_s"]["communication_s"]
    assert on["breakdown_s"]["compute_s"] == off["breakdown_s"]["compute_s"]
    assert any("Megatron communication overlap" in a for a in on["assumptions"])
    assert not any("Megatron communication overlap" in a for a in off["assumptions"])


def test_the_overlap_notes_in_chinese():
    out = subprocess.run([sys.executable, "-m", "trainplan", "estimate", "--model", "llama-2-7b", "--method", "full",
                          "--framework", "megatron", "--gpu", "h100-sxm", "--num-gpus", "16", "--nodes", "2", "--tp", "2",
                          "--pp", "2", "--vpp", "2", "--zero", "1", "--grad-accum", "8", "--comm-overlap", "--lang", "zh"],
                         capture_output=True, text=True, check=True).stdout
    assert out.count("Megatron 通信重叠") == 3 and "Megatron communication overlap" not in out
