"""Write fms-fsdp's training throughput table as spot-benchmark cases (the shared/ground_truth case schema).

    python tools/build_fms_fsdp_cases.py [--out benchmarks/data/fms_fsdp_cases.json]

foundation-model-stack/fms-fsdp README.md @ed74fd5d ("update numbers with compile", 2024-05-09; unchanged at the
newest commit read, 5a296afe): tokens/sec/GPU of Llama 2 7B, 13B, 34B and 70B pre-training with PyTorch FSDP
and torch.compile on "A100 80G 128 GPUs with 400Gbps" and "H100 96 GPUs with 800 Gbps", batch size 2 per
GPU, "the exact same scripts and configurations for these GPUs": 7b HSDP without activation checkpointing,
13b/34b/70b FSDP with "Selective AC".

Settings from the repository at that commit: fms_fsdp/config/training.py (seq_length 4096, vocab_size 32000,
batch_size 2, mixed_precision True, use_torch_compile True), main_training.py (FullyShardedDataParallel with
the bfSixteen policy of fms_fsdp/policies/mixed_precision.py: bf16 parameters and reductions over fp32
shards; torch.optim.AdamW; torch.compile of the whole model; no gradient accumulation), fms_fsdp/utils/
config_utils.py (the 34b variant: 48 layers, hidden 8192, 64 heads, 8 KV heads, MLP 22016, vocab 32000; the
others Llama 2's), the fms LLaMA's attention (torch SDPA, "SDPA Flash v2 implementation").

What the document does not state, and is said in each case's notes: the fraction of blocks "Selective AC"
checkpoints (fms_fsdp/policies/ac_handler.py: selective_checkpointing p checkpoints every 1/p-th block). It
is read from the document's own MFU and HFU table (HFU counts the recomputed forward, MFU not): a fraction p of
blocks recomputed makes HFU / MFU = 1 + p / 3; on A100, 13B 0.69 / 0.61 = 1.13 (p about 1/3: every 3rd
block) and 34B / 70B 0.74 / 0.55 = 1.35 (p = 1: every block). The network rate is read as each node's.
Nothing is fitted to the rows.
"""

from __future__ import annotations

from case_rows import github_source, run_builder

COMMIT = "ed74fd5ddec00e309eac20f478de883464c86526"
REPO, PATH = "foundation-model-stack/fms-fsdp", "README.md"
SEQ, MICRO = 4096, 2
# (size, sharding, AC as the table prints it, A100 tok/s, H100 tok/s)
TABLE = (("7b", "HSDP", "No AC", 4550, 9600), ("13b", "FSDP", "Selective AC", 2150, 4850),
         ("34b", "FSDP", "Selective AC", 820, 1830), ("70b", "FSDP", "Selective AC", 410, 890))
# (label, GPU text, count, network as the table's header prints it)
SYSTEMS = (("a100", "A100 80G", 128, "400Gbps"), ("h100", "H100 80G", 96, "800 Gbps"))
MODELS = {
    "7b": {"name": "Llama-2-7B", "hf_id": "meta-llama/Llama-2-7b-hf", "params_b": 7},
    "13b": {"name": "Llama-2-13B", "hf_id": "meta-llama/Llama-2-13b-hf", "params_b": 13},
    "34b": {"name": "Llama-2-34B (fms-fsdp 34b variant)", "hf_id": None, "params_b": 34, "layers": 48,
            "hidden": 8192, "heads": 64, "kv_heads": 8, "intermediate": 22016, "vocab": 32000,
            "tied_embeddings": False},
    "70b": {"name": "Llama-2-70B", "hf_id": "meta-llama/Llama-2-70b-hf", "params_b": 70},
}
# the recomputed fraction each row implies (module docstring), as checkpointing text the case reader parses
AC_TEXT = {"No AC": False,
           "13b": "activation checkpointing on every 3rd block (Selective AC; fraction from HFU/MFU 0.69/0.61)",
           "34b": True, "70b": True}     # Selective AC at p = 1: every block (HFU/MFU 0.74/0.55, the notes say)
ABOUT = ("fms-fsdp's training throughput table (README.md @ed74fd5d): Llama 2 7B-70B pre-training with PyTorch "
         "FSDP and torch.compile on 128 A100 80G (400 Gbps) and 96 H100 (800 Gbps), tokens/sec/GPU, written in "
         "the shared/ground_truth case schema (tools/build_fms_fsdp_cases.py, whose docstring says what the "
         "document does not state). Nothing is fitted to them.")


def _model(size: str) -> dict:
    base = {"layers": None, "hidden": None, "heads": None, "kv_heads": None, "intermediate": None, "vocab": None,
            "tied_embeddings": None, "moe": None}
    return {**base, **MODELS[size]}


def case(size: str, sharding: str, ac: str, system: tuple, tps: int) -> dict:
    label, gpu, count, network = system
    row = next(r for r in TABLE if r[0] == size)
    hybrid = sharding == "HSDP"
    return {
        "id": f"fms-fsdp-llama2-{size}-{label}-{count}gpu",
        "kind": "time",
        "model": _model(size),
        "method": "pretrain", "lora": None, "quantization": None,
        "precision": {"weights": "fp32 shards, bf16 parameters in compute (FSDP MixedPrecision bfSixteen)",
                      "compute": "bf16", "master_weights": "fp32", "optimizer_states": "fp32"},
        "optimizer": "torch.optim.AdamW (betas 0.9/0.95, wd 0.1)",
        "micro_batch": MICRO, "grad_accum": 1, "global_batch": MICRO * count, "seq_len": SEQ,
        "seq_len_note": "pre-tokenized documents packed to seq_length 4096",
        "grad_ckpt": AC_TEXT["No AC"] if ac == "No AC" else AC_TEXT[size],
        "attention": "torch SDPA (flash)",
        "gpus": {"type": gpu, "count": count},
        "parallel": {"zero_stage": None,
                     "fsdp": "HSDP (hybrid shard: within a node, replicated across nodes)" if hybrid
                     else "FSDP full shard", "tp": 1, "pp": 1, "dp": count, "cp": 1, "ep": None, "sp": None,
                     "offload": None, "other": None},
        "framework": "fms-fsdp (PyTorch FSDP, use_orig_params, limit_all_gathers; torch.compile enabled)",
        "measured": {"tokens_per_s_per_gpu": float(tps), "what": "Training Throughput tokens/sec/GPU"},
        "source": github_source(REPO, COMMIT, PATH, "Training throughput benchmarks table",
                                f"| {size} | {sharding} | Y | {ac} | 2 | {row[3]} | {row[4]} |"),
        "confidence": "medium",
        "notes": (f"{count} GPUs with {network} (the table's header; read as each node's network). "
                  + ("" if ac == "No AC" else "The fraction of blocks Selective AC checkpoints is not stated; read "
                     "from the document's HFU/MFU (tools/build_fms_fsdp_cases.py). ")
                  + "Settings from fms_fsdp/config/training.py and main_training.py at the same commit."),
    }


def cases() -> list[dict]:
    return [case(size, sharding, ac, system, tps) for size, sharding, ac, a100, h100 in TABLE
            for system, tps in zip(SYSTEMS, (a100, h100))]


def main() -> None:
    run_builder(__doc__, "fms_fsdp_cases.json", ABOUT, cases)


if __name__ == "__main__":
    main()
