"""Write NeMo's long-sequence (context parallel) performance tables as published cases, for the spot benchmark.

    git -C NeMo show 14d427f575ee0c3be2719ef7f7c4ecad1b6b45e5:docs/source/performance/performance_long_sequence.md \
        > b200.md
    git -C NeMo show 8cfedd7203462cb251a914e700e5605444277561:docs/source/performance/performance_long_sequence.md \
        > h100.md
    python tools/build_nemo_long_sequence_cases.py --b200 b200.md --b200-commit 14d427f5... \
        --h100 h100.md --h100-commit 8cfedd72... --out benchmarks/data/nemo_long_sequence_cases.json

NVIDIA/NeMo docs/source/performance/performance_long_sequence.md: Megatron-Core pre-training of
Llama-3-8B (FP8, DGX-B200, NeMo 25.04.rc2) and Llama-2-7B (FP8, DGX-H100, NeMo 24.03.01) at 4K-1M tokens
per sequence, with the TP / PP / DP / CP of each run and its TFLOPS per GPU. Only the "with CP" runs are
cases: the "without CP" column does not say its layout. The B200 table is read from its first (markdown)
version: the later HTML version keeps the layouts but prints a GPU count equal to the sequence length in
K (8 GPUs for TP 1 x DP 2), which the layouts contradict. The H100 table is read from the current version,
which adds the global batch.

Metric: TFLOPS per GPU as NeMo counts them, full-mask attention (nemo/utils/flops_formulas.py llama2 /
llama3 before 6251117f "Discount FLOPs in dot-product att", 2025-08-09: 12 s / h per layer, no causal
half); NeMo 24.07's own table gives 46.06 GFLOP per token for Llama-2-7B at 4K, that formula's value. It is
scored against trainplan's model TFLOP/s, counted the same way. Micro-batch 1: NeMo's long-context
recipes (nemo/collections/llm/recipes/llama3_8b_128k.py, MockDataModule micro_batch_size=1). Nothing
here is fitted.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from case_rows import catalog_model

URL = "https://github.com/NVIDIA/NeMo/blob/{commit}/docs/source/performance/performance_long_sequence.md"
PATH = "docs/source/performance/performance_long_sequence.md"
MODELS = {
    "b200": {"name": "Llama-3-8B", "hf_id": "meta-llama/Meta-Llama-3-8B", "params_b": 8, "slug": "llama3-8b",
             "gpu": "B200 (DGX-B200)", "container": "NeMo 25.04.rc2 container (Megatron-Core)",
             "where": "LLAMA3-8B (FP8) - B200"},
    "h100": {"name": "Llama-2-7B", "hf_id": "meta-llama/Llama-2-7b-hf", "params_b": 7, "slug": "llama2-7b",
             "gpu": "H100 SXM 80GB (DGX-H100)", "container": "NeMo 24.03.01 framework container (Megatron-Core)",
             "where": "LLAMA2-7B (FP8) - H100"},
}


def _number(cell: str) -> float:
    return float(cell.replace(",", "").strip())


def b200_rows(text: str) -> list[dict]:
    """The markdown table: SeqLen (K) | # of GPUs | Batch Size | TP | CP | DP | TFLOPS / GPU."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0].isdigit():
            seq_k, gpus, gbs, tp, cp, dp, tflops = cells
            rows.append({"seq_k": int(seq_k), "gpus": int(gpus), "gbs": int(gbs), "tp": int(tp), "pp": 1,
                         "dp": int(dp), "cp": int(cp), "tflops": _number(tflops), "quote": line.strip()})
    return rows


def h100_rows(text: str) -> list[dict]:
    """The HTML table under "LLAMA2-7B (FP8) - H100": SeqLen (K), # of GPUs, Batch Size, TFLOPS without CP,
    then TP, PP, DP, CP and TFLOPS with CP, then the speedup."""
    section = text[text.index(MODELS["h100"]["where"]):]
    rows = []
    for tr in re.findall(r"<tr>(.*?)</tr>", section, flags=re.S):
        cells = re.findall(r"<td[^>]*>(.*?)</td>", tr, flags=re.S)
        if len(cells) != 10:
            continue
        seq_k, gpus, gbs, _without, tp, pp, dp, cp, tflops, _speedup = (re.sub(r"<[^>]+>", "", c) for c in cells)
        rows.append({"seq_k": int(seq_k), "gpus": int(gpus), "gbs": int(gbs), "tp": int(tp), "pp": int(pp),
                     "dp": int(dp), "cp": int(cp), "tflops": _number(tflops),
                     "quote": " | ".join(re.sub(r"<[^>]+>", "", c).strip() for c in cells)})
    return rows


def case(system: str, row: dict, commit: str) -> dict:
    m = MODELS[system]
    layout = row["tp"] * row["pp"] * row["dp"] * row["cp"]
    if layout != row["gpus"]:
        raise SystemExit(f"{system} {row['seq_k']}K: TP x PP x DP x CP = {layout}, the table says {row['gpus']} GPUs")
    seq = row["seq_k"] * 1024
    accum, rest = divmod(row["gbs"], row["dp"])
    if rest:
        raise SystemExit(f"{system} {row['seq_k']}K: global batch {row['gbs']} not a multiple of DP {row['dp']}")
    return {
        "id": f"nemo-longseq-{system}-{m['slug']}-{row['seq_k']}k-cp{row['cp']}-{row['gpus']}gpu",
        "kind": "time",
        "model": catalog_model(m["name"], m["hf_id"], m["params_b"], arch_source=None),
        "method": "pretrain", "lora": None, "quantization": None,
        "precision": {"weights": "bf16", "compute": "FP8 (Transformer Engine)", "master_weights": "fp32",
                      "optimizer_states": "fp32"},
        "optimizer": "Adam (Megatron distributed optimizer)",
        "micro_batch": 1, "grad_accum": accum, "global_batch": row["gbs"], "seq_len": seq,
        "seq_len_note": "pretraining on mock data, full sequences",
        "grad_ckpt": "not stated",
        "attention": "not stated",
        "gpus": {"type": m["gpu"], "count": row["gpus"]},
        "parallel": {"zero_stage": None, "fsdp": None, "tp": row["tp"], "pp": row["pp"], "dp": row["dp"],
                     "cp": row["cp"], "ep": None, "sp": None, "offload": None, "other": None},
        "framework": m["container"],
        "measured": {"tflops_per_gpu": row["tflops"],
                     "what": "TFLOPS / GPU with CP, NeMo's count (full-mask attention, 12 s / h per layer)"},
        "source": {"url": URL.format(commit=commit), "repo": "NVIDIA/NeMo", "path": PATH, "commit": commit,
                   "where": m["where"], "quote": row["quote"]},
        "confidence": "medium",
        "notes": ("Micro-batch not stated: 1, as NeMo's long-context recipes (llama3_8b_128k.py). Recompute "
                  "not stated. Grad accumulation = global batch / DP."),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--b200", type=Path, required=True)
    ap.add_argument("--b200-commit", required=True)
    ap.add_argument("--h100", type=Path, required=True)
    ap.add_argument("--h100-commit", required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    cases = [case("b200", r, args.b200_commit) for r in b200_rows(args.b200.read_text())]
    cases += [case("h100", r, args.h100_commit) for r in h100_rows(args.h100.read_text())]
    about = ("NeMo's long-sequence performance tables (NVIDIA/NeMo docs/source/performance/performance_long_sequence"
             f".md): Llama-3-8B FP8 on DGX-B200 (NeMo 25.04.rc2, @{args.b200_commit[:8]}, the first version of the "
             f"table) and Llama-2-7B FP8 on DGX-H100 (NeMo 24.03.01, @{args.h100_commit[:8]}), 4K-1M tokens per "
             "sequence with context parallelism, TFLOPS per GPU as NeMo counts them (full-mask attention), "
             "written in the shared/ground_truth case schema by tools/build_nemo_long_sequence_cases.py. The "
             "'without CP' runs do not state their layout and are not cases. Nothing is fitted to them.")
    args.out.write_text(json.dumps({"about": about, "cases": cases}, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases -> {args.out}")


if __name__ == "__main__":
    main()
