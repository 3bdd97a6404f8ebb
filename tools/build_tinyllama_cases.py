"""Write TinyLlama's pre-training throughput as a spot-benchmark case (the shared/ground_truth case schema).

    python tools/build_tinyllama_cases.py [--out benchmarks/data/tinyllama_cases.json]

jzhang38/TinyLlama README.md @bf122247 ("Blazingly Fast"): "a throughput of 24k tokens per second per A100-40G
GPU, which translates to 56% model flops utilization without activation checkpointing", for the 1.1B model
the README's table describes (22 layers, 32 heads, 4 query groups, embedding 2048, SwiGLU 5632, sequence 2048,
16 A100-40G GPUs).

Settings from the repository at that commit: pretrain/tinyllama.py (micro_batch_size 8, global_batch_size 512
over num_of_devices 8, so 8 accumulation steps a device; Lightning Fabric FSDPStrategy over the Block modules
with activation_checkpointing_policy None; precision from lit_gpt/utils.py get_default_supported_precision:
bf16-mixed on a bf16 GPU; torch.optim.AdamW; FusedCrossEntropyLoss), lit_gpt/config.py tiny_LLaMA_1b (vocab
32000), lit_gpt/model.py (flash_attn_func, xformers SwiGLU, fused rotary, FusedRMSNorm). The network between
the two nodes is not stated. Nothing is fitted to the row.
"""

from __future__ import annotations

from case_rows import github_source, run_builder

COMMIT = "bf122247c486b6b897050e98cbb7bedae8eeba73"
REPO, PATH = "jzhang38/TinyLlama", "README.md"
ABOUT = ("TinyLlama's pre-training throughput (README.md @bf122247: 24k tokens/s per A100-40G, 16 GPUs, FSDP with "
         "flash-attention's fused kernels), written in the shared/ground_truth case schema "
         "(tools/build_tinyllama_cases.py). Nothing is fitted to it.")


def case() -> dict:
    return {
        "id": "tinyllama-1.1b-pretrain-16xa100-40g",
        "kind": "time",
        "model": {"name": "TinyLlama-1.1B", "hf_id": "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T",
                  "params_b": 1.1, "layers": 22, "hidden": 2048, "heads": 32, "kv_heads": 4, "intermediate": 5632,
                  "vocab": 32000, "tied_embeddings": False, "moe": None},
        "method": "pretrain", "lora": None, "quantization": None,
        "precision": {"weights": "fp32 (Lightning Fabric bf16-mixed)", "compute": "bf16 autocast",
                      "master_weights": "fp32", "optimizer_states": "fp32"},
        "optimizer": "torch.optim.AdamW", "micro_batch": 8, "grad_accum": 8, "global_batch": 1024, "seq_len": 2048,
        "seq_len_note": "packed 2048-token sequences (lit_gpt PackedDataset)",
        "grad_ckpt": False, "attention": "flash-attn 2 (flash_attn_func)",
        "gpus": {"type": "A100-40G", "count": 16},
        "parallel": {"zero_stage": None, "fsdp": "FSDP full shard (Lightning Fabric FSDPStrategy over Block)", "tp": 1,
                     "pp": 1, "dp": 16, "cp": 1, "ep": None, "sp": None, "offload": None, "other": None},
        "framework": ("TinyLlama pretrain/tinyllama.py (lit-gpt on Lightning Fabric FSDP; fused RMSNorm, rotary and "
                      "cross entropy from flash-attention, fused SwiGLU from xformers)"),
        "measured": {"tokens_per_s_per_gpu": 24000.0, "what": "tokens per second per A100-40G GPU"},
        "source": github_source(REPO, COMMIT, PATH, "Blazingly Fast",
                                "we achieve a throughput of **24k** tokens per second per A100-40G GPU"),
        "confidence": "medium",
        "notes": ("16 A100-40G GPUs (the README's Hardware row), 8 per node as pretrain/tinyllama.py's "
                  "num_of_devices; the network between nodes is not stated. Settings from pretrain/tinyllama.py and "
                  "lit_gpt at the same commit (tools/build_tinyllama_cases.py)."),
    }


def cases() -> list[dict]:
    return [case()]


def main() -> None:
    run_builder(__doc__, "tinyllama_cases.json", ABOUT, cases)


if __name__ == "__main__":
    main()
