"""Write the Megatron MoE Model Zoo's Qwen3-235B-A22B results (256 H100) as spot-benchmark cases.

    python tools/build_moe_modelzoo_cases.py [--out benchmarks/data/moe_modelzoo_cases.json]

yanring/Megatron-MoE-ModelZoo best_practice/Qwen3/readme.md @c1ad0b5c ("Performance Results"): Qwen3-235B-A22B pre-
training with Megatron-Core on 256 H100 ("NVLink 4th Generation", "InfiniBand 8x50 GB/s" a node: one 400 Gb/s NIC a
GPU), sequence 4,096, BF16; each row prints its dispatcher (DeepEP or A2A: Megatron's flex dispatcher with DeepEP,
or its alltoall dispatcher), TP, CP, EP, PP, VPP, DP, FSDP, MBS, GBS, GA, recompute, step time and model TFLOP/s per
GPU (ETP, the experts' tensor parallel, is 1 in every row). "recompute" names the recomputed modules: "norm, act" is
--recompute-modules layernorm moe_act (elementwise ops only: read as no recompute, said in the notes), "full" every
layer, blank none. "+1f1b overlap" is --overlap-moe-expert-parallel-comm (the expert all-to-all overlap); "FSDP On"
Megatron's FSDP (read as a full shard). The main table does not say --moe-router-force-load-balancing (the document
adds it only "to test forced load balancing"): routing is taken as balanced in expectation. Left out: the
Qwen3-Next-80B-A3B row (not in trainplan's catalog; "not well tuned", the document says) and the long-context table
(--recompute-modules layernorm moe: the whole MoE block recomputed, not modelled). Nothing is fitted to the rows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from case_rows import BF16_PRETRAIN_PRECISION, catalog_model

ROOT = Path(__file__).resolve().parents[1]
COMMIT = "c1ad0b5c89f425d60febddc38e7f741a16f08bd1"
REPO, PATH = "yanring/Megatron-MoE-ModelZoo", "best_practice/Qwen3/readme.md"
GPUS, SEQ = 256, 4096
# (dispatcher, tp, ep, pp, vpp, dp, fsdp, mbs, gbs, ga, recompute, step s, TFLOP/s, notes, the row as printed)
ROWS = (
    ("DeepEP", 2, 32, 8, 4, 16, False, 1, 2048, 128, "norm, act", 19.7, 245, "",
     "| 235B | DeepEP | H100 | BF16 | 256 | 4096 | 2 | 1 | 32 | 8 | 1 | 1 | 4 | 16 | / | 1 | 2048 | 128 | norm, act "
     "| 19.7 | 245 |"),
    ("DeepEP", 2, 32, 8, 4, 16, False, 1, 2048, 128, "norm, act", 17.6, 276, "+1f1b overlap",
     "| 235B | DeepEP | H100 | BF16 | 256 | 4096 | 2 | 1 | 32 | 8 | 1 | 1 | 4 | 16 | / | 1 | 2048 | 128 | norm, act "
     "| 17.6 | 276 |"),
    ("DeepEP", 2, 8, 1, 1, 128, True, 4, 2048, 4, "full", 17.6, 276, "disable log para norm",
     "| 235B | DeepEP | H100 | BF16 | 256 | 4096 | 2 | 1 | 8 | 1 | 32 | 1 | 1 | 128 | On | 4 | 2048 | 4 | full "
     "| 17.6 | 276 |"),
    ("A2A", 2, 8, 32, 3, 4, False, 1, 2048, 512, "norm, act", 24.2, 200, "",
     "| 235B | A2A | H100 | BF16 | 256 | 4096 | 2 | 1 | 8 | 32 | 1 | 1 | 3 | 4 | / | 1 | 2048 | 512 | norm, act "
     "| 24.2 | 200 |"),
    ("DeepEP", 4, 8, 8, 4, 8, False, 1, 2048, 256, "", 29.0, 167, "",
     "| 235B | DeepEP | H100 | BF16 | 256 | 4096 | 4 | 1 | 8 | 8 | 4 | 1 | 4 | 8 | / | 1 | 2048 | 256 |  | 29.0 "
     "| 167 |"),
)
ABOUT = ("The Megatron MoE Model Zoo's Qwen3-235B-A22B results (best_practice/Qwen3/readme.md @c1ad0b5c): 256 H100, "
         "DeepEP or alltoall dispatch, tensor, expert, pipeline (virtual stages) and FSDP layouts, step time and "
         "TFLOP/s per GPU, written in the shared/ground_truth case schema by tools/build_moe_modelzoo_cases.py, whose "
         "docstring says how each column is read and which rows are left out. Nothing is fitted to them.")


def case(row: tuple) -> dict:
    dispatcher, tp, ep, pp, vpp, dp, fsdp, mbs, gbs, ga, recompute, step_s, tflops, note, printed = row
    other = [f"VP={vpp}"] if vpp > 1 else []
    other.append("--sequence-parallel with TP")
    if dispatcher == "DeepEP":
        other.append("--moe-token-dispatcher-type flex with DeepEP")
    if "1f1b overlap" in note:
        other.append("--overlap-moe-expert-parallel-comm")
    slug = f"{dispatcher.lower()}-tp{tp}-ep{ep}-pp{pp}-vpp{vpp}-mbs{mbs}" + ("-fsdp" if fsdp else "") + (
        "-a2a-overlap" if "overlap" in note else "")
    return {
        "id": f"moe-modelzoo-qwen3-235b-{slug}",
        "kind": "time",
        "model": catalog_model("Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B", 235),
        "method": "pretrain", "lora": None, "quantization": None,
        "precision": dict(BF16_PRETRAIN_PRECISION),
        "optimizer": "Adam (Megatron distributed optimizer)", "micro_batch": mbs, "grad_accum": ga,
        "global_batch": gbs, "seq_len": SEQ, "seq_len_note": "pre-training, full 4,096-token sequences",
        "grad_ckpt": {"full": True, "norm, act": False, "": False}[recompute],
        "attention": "flash (Transformer Engine)",
        "gpus": {"type": "NVIDIA H100", "count": GPUS},
        "parallel": {"zero_stage": None if fsdp else 1, "fsdp": "Megatron FSDP (full shard)" if fsdp else None,
                     "tp": tp, "pp": pp, "dp": dp, "cp": 1, "ep": ep, "etp": 1, "sp": tp > 1, "offload": None,
                     "other": "; ".join(other)},
        "framework": "Megatron-Core (Megatron MoE Model Zoo benchmarking scripts)",
        "measured": {"step_time_s": step_s, "tflops_per_gpu": float(tflops),
                     "what": "Step time (sec) and Per GPU TF as printed"},
        "source": {"url": f"https://github.com/{REPO}/blob/{COMMIT}/{PATH}", "repo": REPO, "path": PATH,
                   "commit": COMMIT, "where": "Performance Results table", "quote": printed},
        "confidence": "medium",
        "notes": ("256 H100, InfiniBand 8x50 GB/s a node. "
                  + ("recompute 'norm, act' (layernorm, moe_act: elementwise) read as none. " if recompute else "")
                  + (f"Row note: {note}." if note else "")).strip(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "data" / "moe_modelzoo_cases.json")
    args = parser.parse_args()
    cases = [case(row) for row in ROWS]
    args.out.write_text(json.dumps({"about": ABOUT, "cases": cases}, indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    print(f"wrote {len(cases)} cases to {args.out}")


if __name__ == "__main__":
    main()
