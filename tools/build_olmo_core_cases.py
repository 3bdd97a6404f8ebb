"""Write OLMo-core's throughput table as spot-benchmark cases (the shared/ground_truth case schema).

    python tools/build_olmo_core_cases.py [--out benchmarks/data/olmo_core_cases.json]

allenai/OLMo-core README.md @e27ba745 ("Update throughput numbers", 2024-11-05; the same figures until the table
left the README at 41f8ddc9, 2025-03-12): tokens per second per device of its official training scripts,
"measured on a cluster with NVIDIA H100 GPUs", OLMo 1B, 7B, 13B and a Llama 8B at context length 4096, each in
BF16 and with `--model.float8_config.enabled=true` ("most matrix multiplications are computed in float8,
everything else is in bfloat16").

Settings from the repository at that commit:
* src/scripts/train/OLMo-1B.py, OLMo-7B.py, OLMo-13B.py, Llama-8B.py: `compile=True`, dp_config
  DataParallelType.fsdp with param_dtype bfloat16 and reduce_dtype float32, fused AdamW (betas 0.9/0.95),
  rank_microbatch_size 8 x 4096 (1B), 2 x 4096 (7B, 8B), 1 x 4096 (13B) tokens, global batch 1024 x 4096
  (2048 x 4096 for 13B), z_loss with `compile_loss=True`, no ac_config (no activation checkpointing);
* src/olmo_core/nn/transformer/config.py: olmo_1B/7B/13B are llama2_1B (d_model 2048, 18 layers, 16 heads),
  llama2_7B (4096, 32, 32), llama2_13B (5120, 40, 40) with QK-norm and reordered norms; llama_like's MLP
  hidden size int(8 d / 3) rounded up to a multiple of 256 (5632, 11008, 13824); llama3_8B (4096, 32 layers,
  32 heads, 8 KV heads, multiplier 1.3, multiple of 1024: 14336); use_flash is False under compile, so
  attention is torch SDPA; TransformerConfig.build converts every Linear but the output head ("w_out") to
  torchao Float8Linear when float8 is on;
* src/olmo_core/float8.py: Float8Config defaults dynamic (tensorwise) scaling for input, weight and grad output,
  enable_fsdp_float8_all_gather True;
* src/olmo_core/nn/transformer/model.py apply_fsdp: torch fully_shard (FSDP2) per block;
* src/olmo_core/data/tokenizer.py: dolma2 vocabulary 100,278, padded_vocab_size() to a multiple of 128: 100,352;
* src/olmo_core/internal/experiment.py: the launch default of one node of 8 GPUs (num_nodes=1, num_gpus=8) and a
  fixed-sequence-length numpy dataset of 4096 tokens (documents concatenated, causal over the whole window).

What the document does not state, and each case's notes say: the GPU count (the launch default, one node of 8,
is taken) and the exact H100 part (the SXM board of the cluster's HGX nodes is taken). Nothing is fitted to the rows.
"""

from __future__ import annotations

from case_rows import github_source, run_builder

COMMIT = "e27ba74550f12a685b95aded46c88f845a7e2d6d"
REPO, PATH = "allenai/OLMo-core", "README.md"
SEQ, GPUS, VOCAB = 4096, 8, 100352
# (size, script, arch label, micro-batch sequences, global batch sequences, BF16 TPS, FP8 TPS)
TABLE = (("1B", "OLMo-1B.py", "OLMo-1124", 8, 1024, 44000, 51000),
         ("7B", "OLMo-7B.py", "OLMo-1124", 2, 1024, 10000, 13000),
         ("8B", "Llama-8B.py", "Llama", 2, 1024, 9500, 12500),
         ("13B", "OLMo-13B.py", "OLMo-1124", 1, 2048, 4600, 5500))
# params_b: the count of these shapes with the 100,352-token vocabulary and untied embeddings (the 8B's vocabulary
# is dolma2's here, not Llama 3's 128,256)
MODELS = {
    "1B": {"name": "OLMo-1B (OLMo-core olmo_1B: llama2_1B with QK-norm)", "params_b": 1.34, "layers": 18,
           "hidden": 2048, "heads": 16, "kv_heads": 16, "intermediate": 5632},
    "7B": {"name": "OLMo-7B (OLMo-core olmo_7B: llama2_7B with QK-norm)", "params_b": 7.30, "layers": 32,
           "hidden": 4096, "heads": 32, "kv_heads": 32, "intermediate": 11008},
    "8B": {"name": "Llama-8B (OLMo-core llama3_8B)", "params_b": 7.8, "layers": 32, "hidden": 4096, "heads": 32,
           "kv_heads": 8, "intermediate": 14336},
    "13B": {"name": "OLMo-13B (OLMo-core olmo_13B: llama2_13B with QK-norm)", "params_b": 13.72, "layers": 40,
            "hidden": 5120, "heads": 40, "kv_heads": 40, "intermediate": 13824},
}
ABOUT = ("OLMo-core's throughput table (README.md @e27ba745): OLMo 1B/7B/13B and Llama 8B pre-training with its "
         "official scripts (PyTorch FSDP2, torch.compile, torchao float8 on request) on H100, tokens/s per device, "
         "written in the shared/ground_truth case schema (tools/build_olmo_core_cases.py, whose docstring says what "
         "the document does not state). Nothing is fitted to them.")


def case(size: str, script: str, arch: str, micro: int, global_batch: int, tps: int, fp8: bool) -> dict:
    precision = "BF16/FP8" if fp8 else "BF16"
    override = " `--model.float8_config.enabled=true`" if fp8 else ""
    return {
        "id": f"olmo-core-{size.lower()}-{'fp8' if fp8 else 'bf16'}-{GPUS}xh100",
        "kind": "time",
        "model": {**MODELS[size], "hf_id": None, "vocab": VOCAB, "tied_embeddings": False, "moe": None},
        "method": "pretrain", "lora": None, "quantization": None,
        "precision": {"weights": "fp32 shards, bf16 parameters in compute (FSDP2 MixedPrecisionPolicy)",
                      "compute": ("fp8 (torchao Float8Linear, dynamic tensorwise scaling, float8 all-gather; "
                                  "output head in bf16)") if fp8 else "bf16",
                      "master_weights": "fp32", "optimizer_states": "fp32"},
        "optimizer": "AdamW (fused, betas 0.9/0.95, wd 0.1)",
        "micro_batch": micro, "grad_accum": global_batch // (micro * GPUS), "global_batch": global_batch,
        "seq_len": SEQ,
        "seq_len_note": "fixed-length 4096-token sequences of concatenated documents (numpy FSL dataset)",
        "grad_ckpt": False,
        "attention": "torch SDPA (use_flash False under compile)",
        "gpus": {"type": "H100 80GB HBM3", "count": GPUS},
        "parallel": {"zero_stage": None, "fsdp": "FSDP full shard (torch fully_shard per block)", "tp": 1, "pp": 1,
                     "dp": GPUS, "cp": 1, "ep": None, "sp": None, "offload": None, "other": None},
        "framework": "OLMo-core (PyTorch FSDP2 fully_shard; torch.compile enabled)",
        "measured": {"tokens_per_s_per_gpu": float(tps), "what": "Throughput, tokens per second per device"},
        "source": github_source(REPO, COMMIT, PATH, "Official training scripts, throughput table",
                                f"| {size} | {arch} | 4096 | {precision} | {tps:,} TPS | `{script}` |{override}"),
        "confidence": "medium",
        "notes": (f"GPU count not stated: the scripts' launch default, one node of {GPUS} "
                  "(src/olmo_core/internal/experiment.py). Settings from the training script and "
                  "src/olmo_core/nn/transformer/config.py at the same commit."),
    }


def cases() -> list[dict]:
    return [case(size, script, arch, micro, gb, tps, fp8) for size, script, arch, micro, gb, bf16, f8 in TABLE
            for fp8, tps in ((False, bf16), (True, f8))]


def main() -> None:
    run_builder(__doc__, "olmo_core_cases.json", ABOUT, cases)


if __name__ == "__main__":
    main()
