"""Write ms-swift 1.x's training benchmark (A100; LoRA, QLoRA and full fine-tuning) as spot-benchmark cases.

    python tools/build_swift_v1_benchmark_cases.py [--out benchmarks/data/swift_v1_benchmark_cases.json]

modelscope/ms-swift docs/source_en/LLM/Benchmark.md @46922151 (ms-swift 1.x, `swift sft`, the HF Trainer): on
A100 (CUDA 11.8, torch 2.1.1, flash_attn 2.3.4, auto_gptq 0.5.1, bitsandbytes 0.41.3), the dataset
cls-fudan-news-zh (damo/zh_cls_fudan-news: "3234.4±2547.5, min=91, max=19548" tokens a sample), unpacked,
truncated at --max_length; "If the following parameters are not specified, the following default values are
used": --max_length 2048, --batch_size 1, --gradient_checkpointing true, --use_flash_attn true, --lora_rank 8,
--lora_target_modules DEFAULT, --quantization_bit 0, --gradient_accumulation_steps 16. Each row varies one of
them and prints "Training Speed (samples/s)" (the HF Trainer's train_samples_per_second): a step is batch x
accumulation samples, so the measured step time is that over the speed. Each row also prints "GPU Memory (GiB)",
ms-swift 1.x's get_max_cuda_memory (torch.cuda.max_memory_reserved / 1024**3): a memory case beside the time case
(id ...-mem), its peak taken at max_length (the longest sample the row keeps). DEFAULT is ms-swift 1.x's LoRATM for the
model type (swift/llm/utils/model.py): Qwen-1 `c_attn`, ChatGLM3 `query_key_value`, Baichuan2 `W_pack`, Yi and
the Mistral-based OpenBuddy-Zephyr `q_proj, k_proj, v_proj` (the document's trainable-parameter column agrees:
qwen-7b-chat rank 8, 32 x 8 x (4096 + 12288) = 4.19M). Left out: the rows on 2 x A100 (ms-swift 1.x splits the
model over the GPUs with device_map, a layout this reader of published time cases does not take), the rows that
printed OOM, and the tuner table (other datasets and tuners). Baichuan2-13B uses ALiBi, which flash attention 2.3
does not take (ms-swift 1.x runs it without): its rows are timed with eager attention, as stated. The A100's memory
size is not printed; the 80GB part is taken (its 40GB part cannot hold the 78.76 GiB full fine-tune row). Nothing
is fitted to the rows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from case_rows import catalog_model

ROOT = Path(__file__).resolve().parents[1]
COMMIT = "46922151e06cdfc110882e182757674f12352f2c"
REPO, PATH = "modelscope/ms-swift", "docs/source_en/LLM/Benchmark.md"
DEFAULTS = dict(max_length=2048, batch=1, ckpt=True, flash=True, rank=8, targets="DEFAULT", quant=None, ga=16)
MODELS = {
    "qwen-1_8b-chat": ("Qwen-1.8B-Chat", "Qwen/Qwen-1_8B-Chat", 1.8, "c_attn"),
    "qwen-7b-chat": ("Qwen-7B-Chat", "Qwen/Qwen-7B-Chat", 7.7, "c_attn"),
    "qwen-14b-chat": ("Qwen-14B-Chat", "Qwen/Qwen-14B-Chat", 14.2, "c_attn"),
    "qwen-72b-chat": ("Qwen-72B-Chat", "Qwen/Qwen-72B-Chat", 72.3, "c_attn"),
    "chatglm3-6b": ("ChatGLM3-6B", "THUDM/chatglm3-6b", 6.2, "query_key_value"),
    "yi-6b-chat": ("Yi-6B-Chat", "01-ai/Yi-6B-Chat", 6.1, "q_proj, k_proj, v_proj"),
    "yi-34b-chat": ("Yi-34B-Chat", "01-ai/Yi-34B-Chat", 34.4, "q_proj, k_proj, v_proj"),
    "openbuddy-zephyr-7b-chat": ("OpenBuddy-Zephyr-7B (Mistral-7B-v0.1 architecture)", "mistralai/Mistral-7B-v0.1",
                                 7.2, "q_proj, k_proj, v_proj"),
    "baichuan2-7b-chat": ("Baichuan2-7B-Chat", "baichuan-inc/Baichuan2-7B-Chat", 7.5, "W_pack"),
    "baichuan2-13b-chat": ("Baichuan2-13B-Chat", "baichuan-inc/Baichuan2-13B-Chat", 13.9, "W_pack"),
}
LENGTHS = (512, 1024, 2048, 4096, 8192)
# Model Type & Max Length, LoRA: samples/s per max length (None: 2 x A100 or OOM, left out)
LORA_BY_LENGTH = {
    "qwen-1_8b-chat": (9.88, 9.90, 8.77, 5.92, 4.19),
    "qwen-7b-chat": (7.43, 6.51, 4.31, 2.05, 1.34),
    "qwen-14b-chat": (5.63, 4.36, 2.60, 1.17, 0.79),
    "chatglm3-6b": (6.72, 6.16, 4.20, 1.92, 1.24),
    "yi-6b-chat": (5.27, 5.07, 3.84, 1.99, 1.35),
    "yi-34b-chat": (2.32, 1.76, 1.05, 0.47, None),
    "openbuddy-zephyr-7b-chat": (5.17, 3.92, 3.08, 1.85, 0.92),
    "baichuan2-7b-chat": (6.09, 5.36, 3.43, 1.69, 1.16),
    "baichuan2-13b-chat": (5.32, 3.91, 1.77, 0.65, 0.36),
}
FULL_BY_LENGTH = {
    "qwen-1_8b-chat": (10.77, 10.39, 8.73, 5.45, 3.81),
    "qwen-7b-chat": (5.96, 5.00, 3.30, 1.64, None),
}
# the same tables' "GPU Memory (GiB)" column, the row's peak: ms-swift 1.x trainers' get_max_cuda_memory,
# torch.cuda.max_memory_reserved / 1024**3 (swift/trainers/mixin.py)
LORA_MEM_BY_LENGTH = {
    "qwen-1_8b-chat": (6.99, 10.71, 16.35, 23.80, 37.03),
    "qwen-7b-chat": (18.01, 21.73, 27.74, 35.31, 48.41),
    "qwen-14b-chat": (30.14, 34.43, 40.14, 47.95, 60.74),
    "chatglm3-6b": (13.94, 12.99, 17.20, 29.80, 66.82),
    "yi-6b-chat": (13.72, 15.44, 16.95, 28.25, 43.81),
    "yi-34b-chat": (66.72, 69.10, 71.34, 78.72, None),
    "openbuddy-zephyr-7b-chat": (14.99, 16.57, 19.89, 23.29, 52.14),
    "baichuan2-7b-chat": (18.18, 17.45, 19.18, 34.22, 45.47),
    "baichuan2-13b-chat": (31.01, 31.58, 32.40, 49.63, 76.17),
}
FULL_MEM_BY_LENGTH = {
    "qwen-1_8b-chat": (18.16, 18.62, 35.11, 31.62, 38.93),
    "qwen-7b-chat": (73.37, 73.64, 74.26, 78.76, None),
}
# (section, model, the setting it varies, samples/s, GPU memory GiB) for the rows of the other tables, qwen-7b-chat
# LoRA unless said
OTHER_ROWS = (
    ("Quantization", "qwen-7b-chat", {"quant": "GPTQ int4"}, 2.05, 19.21),
    ("Quantization", "qwen-7b-chat", {"quant": "GPTQ int8"}, 1.97, 22.20),
    ("Quantization", "qwen-7b-chat", {"quant": "bnb nf4 (bitsandbytes int4)"}, 2.41, 23.85),
    ("Quantization", "qwen-14b-chat", {"quant": "GPTQ int4"}, 1.15, 23.30),
    ("Quantization", "qwen-14b-chat", {"quant": "GPTQ int8"}, 1.08, 29.13),
    ("Quantization", "qwen-14b-chat", {"quant": "bnb nf4 (bitsandbytes int4)"}, 1.36, 30.05),
    ("Quantization", "qwen-72b-chat", {"quant": "GPTQ int4"}, 0.23, 54.86),
    ("Quantization", "qwen-72b-chat", {"quant": "GPTQ int8"}, 0.21, 78.44),
    ("Quantization", "qwen-72b-chat", {"quant": "bnb nf4 (bitsandbytes int4)"}, 0.28, 74.87),
    ("Batch Size", "qwen-7b-chat", {"batch": 2}, 3.60, 43.11),
    ("Batch Size", "qwen-7b-chat", {"batch": 4}, 3.02, 63.81),
    ("Batch Size", "qwen-7b-chat", {"batch": 8}, 2.77, 76.14),
    ("Use Flash Attn & Gradient Checkpointing", "qwen-7b-chat", {"ckpt": False}, 6.19, 37.70),
    ("Use Flash Attn & Gradient Checkpointing", "qwen-7b-chat", {"flash": False}, 3.13, 27.71),
    ("Use Flash Attn & Gradient Checkpointing", "qwen-7b-chat", {"flash": False, "ckpt": False}, 4.45, 57.67),
    ("LoRA Rank & LoRA Target Modules", "qwen-7b-chat", {"rank": 2}, 4.27, 27.72),
    ("LoRA Rank & LoRA Target Modules", "qwen-7b-chat", {"rank": 64}, 4.19, 27.85),
    ("LoRA Rank & LoRA Target Modules", "qwen-7b-chat", {"targets": "ALL"}, 3.22, 27.87),
    ("Gradient Accumulation Steps", "qwen-7b-chat", {"ga": 1}, 4.26, 27.73),
    ("Gradient Accumulation Steps", "qwen-7b-chat", {"ga": 64}, 4.32, 27.74),
)
ABOUT = ("ms-swift 1.x's training benchmark (docs/source_en/LLM/Benchmark.md @46922151): LoRA, QLoRA (GPTQ, "
         "bitsandbytes) and full fine-tuning of Qwen-1, ChatGLM3, Yi, Mistral and Baichuan2 models on one A100 over "
         "cls-fudan-news-zh samples truncated at 512-8192 tokens, samples/s, written in the shared/ground_truth case "
         "schema by tools/build_swift_v1_benchmark_cases.py, whose docstring says which rows are left out and what "
         "DEFAULT targets mean. Nothing is fitted to them.")


def case(section: str, model: str, method: str, settings: dict, speed: float) -> dict:
    s = {**DEFAULTS, **settings}
    name, hf_id, params_b, default_targets = MODELS[model]
    steps_samples = s["batch"] * s["ga"]
    targets = default_targets if s["targets"] == "DEFAULT" else "all linear (ALL)"
    quant = s["quant"]
    varied = ", ".join(f"{k} {v}" for k, v in settings.items()) or "the defaults"
    slug = "-".join(f"{k}{str(v).split()[0].lower()}" for k, v in settings.items() if k != "max_length")
    method_name = "qlora" if quant else method
    eager = model == "baichuan2-13b-chat" or not s["flash"]
    return {
        "id": f"swift-v1-bench-{model}-{method_name}-len{s['max_length']}" + (f"-{slug}" if slug else ""),
        "kind": "time",
        "model": catalog_model(name, hf_id, params_b),
        "method": method_name,
        "lora": {"rank": s["rank"], "alpha": 32, "targets": targets, "dropout": 0.05}
        if method == "lora" else None,
        "quantization": quant,
        "precision": {"weights": "bf16", "compute": "bf16"},
        "optimizer": "AdamW (HF Trainer)",
        "micro_batch": s["batch"], "grad_accum": s["ga"], "global_batch": steps_samples, "seq_len": s["max_length"],
        "seq_len_note": "max_length: cls-fudan-news-zh samples (3234.4 +- 2547.5 tokens) truncated to it, unpacked",
        "grad_ckpt": s["ckpt"],
        "attention": "eager" if eager else "flash_attn 2",
        "gpus": {"type": "A100 80GB", "count": 1},
        "parallel": {"zero_stage": None, "fsdp": None, "tp": 1, "pp": 1, "dp": 1, "cp": 1, "ep": None, "sp": None,
                     "offload": None, "other": None},
        "framework": "ms-swift 1.x swift sft (HF Trainer), --dataset cls-fudan-news-zh, packing=false",
        "measured": {"step_time_s": round(steps_samples / speed, 4),
                     "what": f"Training Speed {speed} samples/s; step time = {steps_samples} samples a step / speed"},
        "source": {"url": f"https://github.com/{REPO}/blob/{COMMIT}/{PATH}", "repo": REPO, "path": PATH,
                   "commit": COMMIT, "where": f"{section} table, {model}, {varied}",
                   "quote": f"<td>{speed}</td>"},
        "confidence": "medium",
        "notes": ("One A100 (the size not printed: 80GB taken). DEFAULT targets from ms-swift 1.x LoRATM; lora_alpha "
                  "32 and lora_dropout 0.05 are ms-swift 1.x's sft defaults."
                  + (" Baichuan2-13B (ALiBi) without flash attention." if model == "baichuan2-13b-chat" else "")),
    }


def memory_case(time_case: dict, gib: float) -> dict:
    """The row's GPU memory as a memory case beside its time case: the peak comes with the longest sample the
    row keeps (ms-swift 1.x deletes longer ones: truncation_strategy 'delete'), taken at max_length."""
    return {**time_case, "id": time_case["id"] + "-mem", "kind": "memory",
            "seq_len_note": "max_length: the longest cls-fudan-news-zh sample kept (longer ones deleted) sets the "
                            "peak; taken at max_length",
            "measured": {"peak_mem_gib": gib, "reported_value": gib, "reported_unit": "GiB",
                         "what": "max_memory_reserved (ms-swift 1.x trainers get_max_cuda_memory: "
                                 "torch.cuda.max_memory_reserved / 1024**3)", "scope": "per_gpu"},
            "source": {**time_case["source"], "quote": f"<td>{gib:.2f}</td>"}}


def cases() -> list[dict]:
    out, memory = [], []
    for model, speeds in LORA_BY_LENGTH.items():
        for length, speed, gib in zip(LENGTHS, speeds, LORA_MEM_BY_LENGTH[model]):
            if speed is not None:
                out.append(case("Model Type & Max Length (LoRA)", model, "lora", {"max_length": length}, speed))
                memory.append(memory_case(out[-1], gib))
    for model, speeds in FULL_BY_LENGTH.items():
        for length, speed, gib in zip(LENGTHS, speeds, FULL_MEM_BY_LENGTH[model]):
            if speed is not None:
                out.append(case("Model Type & Max Length (Full)", model, "full", {"max_length": length}, speed))
                memory.append(memory_case(out[-1], gib))
    for section, model, settings, speed, gib in OTHER_ROWS:
        out.append(case(section, model, "lora", settings, speed))
        memory.append(memory_case(out[-1], gib))
    return out + memory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "data" / "swift_v1_benchmark_cases.json")
    args = parser.parse_args()
    rows = cases()
    args.out.write_text(json.dumps({"about": ABOUT, "cases": rows}, indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")
    print(f"wrote {len(rows)} cases to {args.out}")


if __name__ == "__main__":
    main()
