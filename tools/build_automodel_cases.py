"""Write NeMo AutoModel's performance summary (DGX-H100, BF16) as spot-benchmark cases.

    python tools/build_automodel_cases.py [--out benchmarks/data/automodel_cases.json]

NVIDIA-NeMo/Automodel docs/performance-summary.mdx @cb976544 (2026-06-12): pre-training (DeepSeek V3, Kimi K2, Qwen3
MoE 30B, GPT-OSS 20B/120B, Llama 3 70B) and LoRA fine-tuning (Llama 3 8B/70B, Qwen2.5 7B/32B) on DGX-H100, "full
sequences with no padding", mock data, "Fake balanced gate is enabled to simulate ideal expert routing",
Tokens/sec/GPU as printed. The table states each row's GBS, MBS, LBS, GA, sequence, TP, PP, CP, EP, VP and FSDP
size; what it does not state is read from the row's recipe (examples/llm_benchmark/ at the same commit): activation
checkpointing (`distributed.activation_checkpointing`, default False: nemo_automodel/components/
distributed/config.py `activation_checkpointing: ActivationCheckpointingMode = False`), torch.compile
(`enable_compile`), the LoRA block (`peft:` dim 16, alpha 32, target_modules '*_proj': every linear of the blocks;
dropout 0.1 in the Llama 3 8B recipe, 0 in the others, PeftConfig's default), and the expert parallel size of the
GPT-OSS rows (the table prints "-"; the recipes set ep_size 8 and 64). Precision is FSDP2's MixedPrecisionPolicy the
library builds (config.py: param_dtype bfloat16, reduce_dtype float32). Left out: the three Nemotron V3 rows (hybrid
Mamba-Transformer MoE, not in trainplan's catalog). Where a recipe at the commit disagrees with its table row (the
GPT-OSS 120B recipe's local_batch_size 1 against the row's LBS 2), the table is taken: it is what was measured.
Nothing is fitted to the rows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from case_rows import catalog_model

ROOT = Path(__file__).resolve().parents[1]
COMMIT = "cb9765441e5127b8100879ca1f7ff5920f825887"
REPO, PATH = "NVIDIA-NeMo/Automodel", "docs/performance-summary.mdx"
MODELS = {
    "DeepSeek V3 671B": ("DeepSeek-V3", "deepseek-ai/DeepSeek-V3", 671),
    "Kimi K2": ("Kimi-K2-Base", "moonshotai/Kimi-K2-Base", 1026),
    "Qwen3 MoE 30B": ("Qwen3-30B-A3B", "Qwen/Qwen3-30B-A3B", 30.5),
    "GPT-OSS 20B": ("gpt-oss-20b", "openai/gpt-oss-20b", 21),
    "GPT-OSS 120B": ("gpt-oss-120b", "openai/gpt-oss-120b", 117),
    "Llama3 70B pretrain": ("Llama-3.1-70B", "meta-llama/Llama-3.1-70B", 70),
    "Llama3 8B": ("Llama-3.1-8B", "meta-llama/Llama-3.1-8B", 8),
    "Qwen2.5 7B": ("Qwen2.5-7B", "Qwen/Qwen2.5-7B", 7.6),
    "Llama3 70B": ("Llama-3.3-70B-Instruct", "meta-llama/Llama-3.3-70B-Instruct", 70),
    "Qwen2.5 32B": ("Qwen2.5-32B-Instruct", "Qwen/Qwen2.5-32B-Instruct", 32.8),
}
# (model, the row as printed, method, GPUs, GBS, MBS, LBS, GA, seq, TP, PP, CP, EP, VP, FSDP, kernels, step s,
#  tokens/s/GPU, recipe, activation checkpointing, compile, attention)
ROWS = (
    ("DeepSeek V3 671B", "DeepSeek V3 671B", "pretrain", 1024, 8192, 1, 8, 4, 4096, 1, 4, 1, 64, 8, 256,
     "TE + DeepEP", 37.87, 865, "deepseek/deepseek_v3_te_deepep_1024.yaml", False, False, "te"),
    ("DeepSeek V3 671B", "DeepSeek V3 671B", "pretrain", 256, 512, 1, 8, 1, 4096, 1, 4, 1, 64, 8, 64,
     "TE + DeepEP", 8.18, 1002, "deepseek/deepseek_v3_te_deepep.yaml", True, False, "te"),
    ("Kimi K2", "Kimi K2", "pretrain", 256, 512, 1, 8, 2, 4096, 1, 8, 1, 32, 4, 32,
     "TE + DeepEP", 8.86, 924, "kimi/kimi_k2_te_deepep.yaml", True, False, "te"),
    ("Qwen3 MoE 30B", "Qwen3 MoE 30B", "pretrain", 8, 512, 4, 4, 16, 4096, 1, 1, 1, 8, None, 8,
     "TE + DeepEP", 21.773, 12040, "qwen/qwen3_moe_30b_te_deepep.yaml", True, False, "te"),
    ("GPT-OSS 20B", "GPT-OSS 20B", "pretrain", 8, 256, 2, 2, 16, 4096, 1, 1, 1, 8, None, 8,
     "TE + DeepEP + FlexAttn", 10.04, 13058, "gpt_oss/gptoss_20b_te_deepep.yaml", False, False, "flex"),
    ("GPT-OSS 120B", "GPT-OSS 120B", "pretrain", 64, 512, 2, 2, 4, 4096, 1, 1, 1, 64, None, 64,
     "TE + DeepEP + FlexAttn", 4.30, 7626, "gpt_oss/gptoss_120b_te_deepep.yaml", False, False, "te"),
    ("Llama3 70B pretrain", "Llama3 70B", "pretrain", 64, 128, 1, 1, 4, 8192, 1, 1, 2, None, None, 32,
     "TE + fsdp2_prefetch", 18.90, 866.77, "llama3_3/custom_llama3_1_70b_pretrain_benchmark_8nodes.yaml", True, True,
     "sdpa"),
    ("Llama3 8B", "Llama3 8B", "lora", 1, 32, 2, 2, 16, 4096, 1, 1, 1, None, 1, 1,
     "TE + triton", 10.51, 12472.87, "llama3_1/llama3_1_8b_peft_benchmark.yaml", False, False, "sdpa"),
    ("Qwen2.5 7B", "Qwen2.5 7B", "lora", 1, 32, 2, 2, 16, 4096, 1, 1, 1, None, 1, 1,
     "TE + triton", 9.29, 14110.05, "qwen/qwen2_5_7b_peft_benchmark.yaml", False, False, "sdpa"),
    ("Llama3 70B", "Llama3 70B", "lora", 8, 32, 2, 2, 4, 4096, 2, 1, 1, None, 1, 4,
     "TE + triton + fsdp2_prefetch", 15.00, 1091.85, "llama3_3/custom_llama3_3_70b_instruct_peft_benchmark.yaml",
     True, True, "sdpa"),
    ("Qwen2.5 32B", "Qwen2.5 32B", "lora", 8, 32, 2, 2, 4, 4096, 2, 1, 1, None, 1, 4,
     "TE + triton + fsdp2_prefetch", 7.28, 2250.31, "qwen/custom_qwen2_5_32b_peft_benchmark.yaml", True, True, "sdpa"),
    ("Llama3 70B", "Llama3 70B 2-node", "lora", 16, 32, 2, 2, 2, 4096, 2, 1, 1, None, 1, 8,
     "TE + triton + fsdp2_prefetch", 8.32, 984.85, "llama3_3/custom_llama3_3_70b_instruct_peft_benchmark_2nodes.yaml",
     True, True, "sdpa"),
    ("Qwen2.5 32B", "Qwen2.5 32B 2-node", "lora", 16, 32, 2, 2, 2, 4096, 2, 1, 1, None, 1, 8,
     "TE + triton + fsdp2_prefetch", 3.95, 2072.89, "qwen/custom_qwen2_5_32b_peft_benchmark_2nodes.yaml",
     True, True, "sdpa"),
)
# the recipes' `peft: dropout` (components/_peft/lora.py PeftConfig dropout default 0.0; applied after the adapter,
# dropout_position 'post')
LORA_DROPOUT = {"llama3_1/llama3_1_8b_peft_benchmark.yaml": 0.1, "qwen/qwen2_5_7b_peft_benchmark.yaml": 0.0}
ABOUT = ("NeMo AutoModel's performance summary (docs/performance-summary.mdx @cb976544): pre-training and LoRA "
         "fine-tuning on DGX-H100 in BF16 with PyTorch FSDP2 (plus EP, PP, CP, TP), tokens/sec/GPU, written in the "
         "shared/ground_truth case schema by tools/build_automodel_cases.py, whose docstring says which settings "
         "come from each row's recipe. Nothing is fitted to them.")


# the rows as the document prints them (source.quote), in ROWS' order
QUOTES = (
    "| DeepSeek V3 671B | 1024 | 8192 | 1 | 8 | 4 | 4096 | 1 | 4 | 1 | 64 | 8 | 256 | TE + DeepEP "
    "| 37.87 | 216 | 865 |",
    "| DeepSeek V3 671B | 256 | 512 | 1 | 8 | 1 | 4096 | 1 | 4 | 1 | 64 | 8 | 64 | TE + DeepEP | 8.18 | 250 | 1,002 |",
    "| Kimi K2 | 256 | 512 | 1 | 8 | 2 | 4096 | 1 | 8 | 1 | 32 | 4 | 32 | TE + DeepEP | 8.86 | 189 | 924 |",
    "| Qwen3 MoE 30B | 8 | 512 | 4 | 4 | 16 | 4096 | 1 | 1 | 1 | 8 | - | 8 | TE + DeepEP | 21.773 | 277 | 12,040 |",
    "| GPT-OSS 20B | 8 | 256 | 2 | 2 | 16 | 4096 | 1 | 1 | 1 | - | - | 8 | TE + DeepEP + FlexAttn "
    "| 10.04 | 279 | 13,058 |",
    "| GPT-OSS 120B | 64 | 512 | 2 | 2 | 4 | 4096 | 1 | 1 | 1 | - | - | 64 | TE + DeepEP + FlexAttn "
    "| 4.30 | 231 | 7,626 |",
    "| Llama3 70B | 64 | 128 | 1 | 1 | 4 | 8192 | 1 | 1 | 2 | - | - | 32 | TE + fsdp2_prefetch | 18.90 "
    "| 389 | 866.77 |",
    "| Llama3 8B | 1 | 32 | 2 | 2 | 16 | 4096 | 1 | 1 | 1 | - | 1 | 1 | TE + triton | 10.51 | 402 | 12472.87 |",
    "| Qwen2.5 7B | 1 | 32 | 2 | 2 | 16 | 4096 | 1 | 1 | 1 | - | 1 | 1 | TE + triton | 9.29 | 423 | 14110.05 |",
    "| Llama3 70B | 8 | 32 | 2 | 2 | 4 | 4096 | 2 | 1 | 1 | - | 1 | 4 | TE + triton + fsdp2_prefetch "
    "| 15.00 | 316 | 1091.85 |",
    "| Qwen2.5 32B | 8 | 32 | 2 | 2 | 4 | 4096 | 2 | 1 | 1 | - | 1 | 4 | TE + triton + fsdp2_prefetch "
    "| 7.28 | 301 | 2250.31 |",
    "| Llama3 70B 2-node | 16 | 32 | 2 | 2 | 2 | 4096 | 2 | 1 | 1 | - | 1 | 8 "
    "| TE + triton + fsdp2_prefetch | 8.32 | 285 "
    "| 984.85 |",
    "| Qwen2.5 32B 2-node | 16 | 32 | 2 | 2 | 2 | 4096 | 2 | 1 | 1 | - | 1 | 8 "
    "| TE + triton + fsdp2_prefetch | 3.95 | 277 "
    "| 2072.89 |",
)


def case(row: tuple, printed_row: str) -> dict:
    (key, printed, method, gpus, gbs, mbs, lbs, ga, seq, tp, pp, cp, ep, vp, fsdp, kernels, step_s, tgs, recipe,
     ckpt, compiled, attention) = row
    name, hf_id, params_b = MODELS[key]
    dp = gpus // (tp * pp * cp)
    slug = printed.lower().replace(" ", "-").replace(".", "")
    flags = [f"Kernel Optimizations: {kernels}", f"activation_checkpointing: {str(ckpt).lower()}",
             f"enable_compile: {str(compiled).lower()}"]
    if ep:
        flags.append("fake_balanced_gate: true (balanced expert routing)")
    other = [f"FSDP size {fsdp}"] + ([f"VP={vp}", "pp_schedule interleaved1f1b"] if pp > 1 else [])
    return {
        "id": f"automodel-{slug}-{method}-{gpus}xh100",
        "kind": "time",
        "model": catalog_model(name, hf_id, params_b),
        "method": method,
        "lora": {"rank": 16, "alpha": 32, "targets": "all linear ('*_proj': q, k, v, o, gate, up, down)",
                 "dropout": LORA_DROPOUT.get(recipe, 0.0)} if method == "lora" else None,
        "quantization": None,
        "precision": {"weights": "bf16", "compute": "bf16 (FSDP2 MixedPrecisionPolicy param_dtype bfloat16)",
                      "master_weights": "as loaded", "optimizer_states": "as the parameters"},
        "optimizer": "torch.optim.Adam" if method == "pretrain" else "torch.optim.AdamW",
        "micro_batch": mbs, "grad_accum": gbs // (mbs * dp), "global_batch": gbs, "seq_len": seq,
        "seq_len_note": "mock data, full sequences with no padding",
        "grad_ckpt": ckpt, "attention": {"te": "Transformer Engine DotProductAttention", "flex": "flex attention",
                                         "sdpa": "torch SDPA"}[attention],
        "gpus": {"type": "NVIDIA H100 80GB (DGX-H100)", "count": gpus},
        "parallel": {"zero_stage": None, "fsdp": f"FSDP2 full shard over {fsdp} GPUs", "tp": tp, "pp": pp, "dp": dp,
                     "cp": cp, "ep": ep, "sp": False if tp > 1 else None, "offload": None, "other": "; ".join(other)},
        "framework": "NeMo AutoModel (PyTorch FSDP2; " + ", ".join(flags) + ")",
        "measured": {"tokens_per_s_per_gpu": float(tgs), "step_time_s": step_s,
                     "what": "Tokens/sec/GPU and Time per Global Step (s) as printed"},
        "source": {"url": f"https://github.com/{REPO}/blob/{COMMIT}/{PATH}", "repo": REPO, "path": PATH,
                   "commit": COMMIT, "where": "Pre-Training / Fine-Tuning (LoRA) Performance tables, DGX-H100 BF16",
                   "quote": printed_row},
        "confidence": "medium",
        "notes": f"Settings the table does not print from examples/llm_benchmark/{recipe} at the same commit.",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "data" / "automodel_cases.json")
    args = parser.parse_args()
    cases = [case(row, line) for row, line in zip(ROWS, QUOTES, strict=True)]
    args.out.write_text(json.dumps({"about": ABOUT, "cases": cases}, indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    print(f"wrote {len(cases)} cases to {args.out}")


if __name__ == "__main__":
    main()
