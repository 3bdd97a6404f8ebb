"""Time the trace backend on the two issue-3 reference setups; print wall seconds and max RSS.

    .venv/bin/python benchmarks/trace_timing.py            # both cases, one process each
    .venv/bin/python benchmarks/trace_timing.py --case llama-2-7b-lora --json

Cases (issue 3, "Must show"): Qwen2.5-0.5B full fine-tune, batch 4 x 1024; Llama-2-7B LoRA r=16
on q_proj,v_proj, batch 1 x 1024. bf16 mixed precision, AdamW, no checkpointing, sdpa. Target: a
7B step in at most 60 s on this machine (2 cores), under 2 GB of RAM. Config values from
/work/shared/reference/model_configs.json (HF config.json keys).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

QWEN25_05B = {   # Qwen/Qwen2.5-0.5B config.json
    "model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14,
    "num_key_value_heads": 2, "intermediate_size": 4864, "vocab_size": 151936,
    "max_position_embeddings": 32768, "tie_word_embeddings": True, "hidden_act": "silu",
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "use_sliding_window": False,
    "torch_dtype": "bfloat16"}
LLAMA2_7B = {    # meta-llama/Llama-2-7b-hf config.json
    "model_type": "llama", "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
    "num_key_value_heads": 32, "intermediate_size": 11008, "vocab_size": 32000,
    "max_position_embeddings": 4096, "tie_word_embeddings": False, "hidden_act": "silu",
    "rms_norm_eps": 1e-05, "torch_dtype": "float16"}


def _setup(case: str):
    from trainplan.enums import Method
    from trainplan.job.training import LoraConfig, TrainingSetup
    from trainplan.model.hfconfig import spec_from_hf_config

    if case == "qwen2.5-0.5b-full":
        spec = spec_from_hf_config(QWEN25_05B, name="qwen2.5-0.5b", hf_id="Qwen/Qwen2.5-0.5B")
        return TrainingSetup(model=spec, method=Method.FULL, batch_size=4, seq_len=1024)
    if case == "llama-2-7b-lora":
        spec = spec_from_hf_config(LLAMA2_7B, name="llama-2-7b", hf_id="meta-llama/Llama-2-7b-hf")
        return TrainingSetup(model=spec, method=Method.LORA, batch_size=1, seq_len=1024,
                             lora=LoraConfig(rank=16, targets=("q_proj", "v_proj")))
    raise SystemExit(f"unknown case {case!r}; known: {', '.join(CASES)}")


CASES = ("qwen2.5-0.5b-full", "llama-2-7b-lora")


def run_case(case: str) -> dict:
    started = time.perf_counter()
    from trainplan.trace import run_trace

    import_s = time.perf_counter() - started
    result = run_trace(_setup(case))
    return {"case": case, "wall_s": round(time.perf_counter() - started, 2),
            "import_s": round(import_s, 2), "trace_wall_s": result.wall_s,
            "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "peak_allocated_bytes": result.peak_allocated_bytes,
            "peak_cuda_allocated_bytes": result.peak_cuda_allocated_bytes,
            "peak_phase": result.peak_phase, "peak_module": result.peak_module,
            "breakdown_bytes": result.breakdown_bytes}


def _print(row: dict) -> None:
    gib = 2**30
    print(f"{row['case']}: wall {row['wall_s']:.1f} s (imports {row['import_s']:.1f} s, trace "
          f"{row['trace_wall_s']:.1f} s), max RSS {row['max_rss_bytes'] / gib:.2f} GiB")
    print(f"  peak {row['peak_allocated_bytes'] / gib:.3f} GiB ({row['peak_allocated_bytes']:,} B) in "
          f"{row['peak_phase']} {row['peak_module']}")
    for name, value in row["breakdown_bytes"].items():
        print(f"    {name:16s} {value / gib:8.3f} GiB  {value:>15,} B")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=CASES)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.case:
        row = run_case(args.case)
        print(json.dumps(row)) if args.json else _print(row)
        return
    for case in CASES:   # one process per case, so max RSS is the case's own
        out = subprocess.run([sys.executable, __file__, "--case", case, "--json"], check=True,
                             capture_output=True, text=True).stdout
        row = json.loads(out.strip().splitlines()[-1])
        print(json.dumps(row)) if args.json else _print(row)


if __name__ == "__main__":
    main()
