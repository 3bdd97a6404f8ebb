"""Write XTuner's Megatron MoE benchmark (Qwen3-235B-A22B on 256 H800) as spot-benchmark cases.

    python tools/build_xtuner_megatron_moe_cases.py [--out benchmarks/data/xtuner_megatron_moe_cases.json]

InternLM/xtuner docs/en/benchmark/megatron_moe_benchmark.md @4b10fa3e (2025-10-22): Qwen3-235B-A22B pre-training
with Megatron-Core (Pai-Megatron-Patch 2b201af, image pai-megatron-patch:25.04) on 256 H800, sequence 4,096,
seconds per iteration and tokens per GPU per second for each tried configuration. The document states, for all
rows: the official Qwen3 example script's settings, `--micro-batch-size 1` unless a row says otherwise,
`--sequence-parallel` whenever TP is on, `--moe-router-force-load-balancing` (balanced experts), no CUDA graphs,
and `recompute=select` = `--recompute-granularity selective --recompute-modules moe_act layernorm` ("introducing
minimal recomputation ... can be approximated as no recompute"), `recompute=full` = every layer recomputed.

Each distinct configuration is one case (rows repeated across the document's tables once). Left out, with the
reason: `recompute=moe` (recomputing the whole MoE block: not modelled) and the four `capacity=` rows (real,
unbalanced routing with a capacity factor: not modelled). Read as stated and said in the notes: `deepep` is
Megatron's DeepEP dispatcher (trainplan times expert all-to-alls alike with or without it); "zero overlap" and
"zero/tp overlap" switch on --overlap-grad-reduce/--overlap-param-gather (and --tp-comm-overlap), which the case
schema cannot state (timed alike); the network between the 32 nodes is not stated (the H800 default applies).
Nothing is fitted to the rows.
"""

from __future__ import annotations

from case_rows import BF16_PRETRAIN_PRECISION, catalog_model, github_source, run_builder

COMMIT = "4b10fa3ed"
PATH = "docs/en/benchmark/megatron_moe_benchmark.md"
GPUS, SEQ = 256, 4096
# (configuration as printed, tp, ep, pp, vpp, mbs, recompute, global batch, s/iter, tokens/GPU/s, TFLOPS or None)
ROWS = (
    ("tp2, ep8, pp32, vpp3, mbs=1, recompute=select", 2, 8, 32, 3, 1, "select", 2048, 22.42, 1461.56, 216.4),
    ("tp4, ep8, pp8, vpp4, mbs=1", 4, 8, 8, 4, 1, "none", 2048, 35.481, 923.53, None),
    ("tp2, ep32, pp8, vpp4, recompute=select", 2, 32, 8, 4, 1, "select", 2048, 35.392, 925.87, None),
    ("tp2, ep32, deepep, pp8, vpp4, recompute=select", 2, 32, 8, 4, 1, "select", 2048, 25.73, 1273.54, None),
    ("tp2, ep8, pp8, recompute=select", 2, 8, 8, 1, 1, "select", 2048, 27.555, 1189.17, None),
    ("tp2, ep8, pp8, recompute=select, zero overlap", 2, 8, 8, 1, 1, "select", 2048, 29.66, 1104.8, None),
    ("tp2, ep8, pp8, recompute=select, zero/tp overlap", 2, 8, 8, 1, 1, "select", 2048, 29.276, 1119.26, None),
    ("tp2, ep8, pp32, vpp3, mbs=4, recompute=full", 2, 8, 32, 3, 4, "full", 4096, 43.495, 1506.76, 223.08),
    ("tp2, ep8, pp32, mbs=4, recompute=full", 2, 8, 32, 1, 4, "full", 8192, 92.652, 1414.68, None),
    ("tp1, ep8, pp32, vpp3, mbs=4, recompute=full", 1, 8, 32, 3, 4, "full", 4096, 42.537, 1540.68, 228.09),
    ("tp1, ep8, pp32, vpp3, mbs=8, recompute=full", 1, 8, 32, 3, 8, "full", 8192, 86.186, 1520.8, 225.15),
)
GRAD_CKPT = {"select": "selective (--recompute-modules moe_act layernorm: 'approximated as no recompute')",
             "full": "full (every transformer layer recomputed)", "none": False}
ABOUT = ("XTuner's Megatron MoE benchmark (docs/en/benchmark/megatron_moe_benchmark.md @4b10fa3e): Qwen3-235B-A22B "
         "pre-training on 256 H800 with Megatron-Core (Pai-Megatron-Patch), written in the shared/ground_truth case "
         "schema by tools/build_xtuner_megatron_moe_cases.py, whose docstring says what the document states for "
         "every row and which rows are left out. Nothing is fitted to them.")


def case(config: str, tp: int, ep: int, pp: int, vpp: int, mbs: int, recompute: str, gbs: int, step_s: float,
         tgs: float, tflops: float | None) -> dict:
    dp = GPUS // (tp * pp)
    slug = config.replace(", ", "-").replace("=", "").replace("/", "").replace(" ", "-")
    measured = {"step_time_s": step_s, "tokens_per_s_per_gpu": tgs,
                "what": "TimePerIter (s) and Tokens/GPU/Second as printed"}
    if tflops is not None:
        measured["tflops_per_gpu"] = tflops
    return {
        "id": f"xtuner-megatron-qwen3-235b-{slug}",
        "kind": "time",
        "model": catalog_model("Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B", 235),
        "method": "pretrain", "lora": None, "quantization": None,
        "precision": dict(BF16_PRETRAIN_PRECISION),
        "optimizer": "Adam (Megatron distributed optimizer)", "micro_batch": mbs, "grad_accum": gbs // (mbs * dp),
        "global_batch": gbs, "seq_len": SEQ, "seq_len_note": "pre-training, full 4,096-token sequences",
        "grad_ckpt": GRAD_CKPT[recompute], "attention": "flash (Transformer Engine)",
        "gpus": {"type": "NVIDIA H800", "count": GPUS},
        "parallel": {"zero_stage": 1, "fsdp": None, "tp": tp, "pp": pp, "dp": dp, "cp": 1, "ep": ep,
                     "sp": tp > 1, "offload": None,
                     "other": f"VP={vpp}; --sequence-parallel with TP; --moe-router-force-load-balancing"
                              + ("; DeepEP dispatcher" if "deepep" in config else "")},
        "framework": "Megatron-Core (Pai-Megatron-Patch 2b201af, Qwen3 example script)",
        "measured": measured,
        "source": github_source("InternLM/xtuner", COMMIT, PATH, "Megatron Training Qwen3-235B-A22B ... tables",
                                f"{config} | {SEQ} | {gbs} | {GPUS} | {step_s} | {tgs}"),
        "confidence": "medium",
        "notes": ("256 H800 (32 nodes); the network between nodes is not stated. recompute=select read as Megatron's "
                  "selective recompute (the document: approximately none). Overlap flags, where a row names them, "
                  "are not stated in the schema (timed alike)."),
    }


def cases() -> list[dict]:
    return [case(*row) for row in ROWS]


def main() -> None:
    run_builder(__doc__, "xtuner_megatron_moe_cases.json", ABOUT, cases)


if __name__ == "__main__":
    main()
