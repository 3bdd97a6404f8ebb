"""Write Megatron-Bridge performance-summary rows as published cases (benchmarks/data), for the spot benchmark.

    python tools/build_mbridge_cases.py ARCHIVE.md --commit SHA --containers 26.04 26.04.01 26.06 26.06.01 \
        --out benchmarks/data/mbridge_2604_2606_cases.json

ARCHIVE.md is docs/performance-summary-archive.md of NVIDIA-NeMo/Megatron-Bridge at SHA (`git show
SHA:docs/performance-summary-archive.md`). Each table row of the named containers whose model the catalog
builds becomes one case in the shared/ground_truth schema, its settings as the columns give them (GBS, MBS,
sequence length, FSDP, TP, PP, CP, VP, EP; GPU count and system), the rest as the dev set's cases of the
same source state them (published_dev2.json: the model block, optimizer, recompute "per performance
recipe"). Rows in NVFP4 (not modelled), of models the catalog lacks (DeepSeek-V4, the hybrid Mamba
Nemotron 3 family) or trained with Muon (Kimi-K2) are left out and counted. Nothing here is fitted.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEV2 = ROOT / "tests" / "data" / "published_dev2.json"
NEMO = ROOT / "benchmarks" / "data" / "nemo_cases.json"

# table model name -> (slug, the dev2 case whose model block and settings it takes)
MODELS = {
    "LLAMA3_8B": ("llama-3-8b", "mbridge-2511-dgx-h100-llama-3-8b-fp8-cs-8gpu"),
    "LLAMA3_70B": ("llama-3-70b", "mbridge-2602-dgx-h100-llama-3-70b-fp8-64gpu"),
    "LLAMA3.1_405B": ("llama-31-405b", "mbridge-2602-dgx-h100-llama-31-405b-fp8-1024gpu"),
    "DeepSeekV3": ("deepseek-v3", "mbridge-2602-dgx-b200-deepseek-v3-mxfp8-256gpu"),
    "GPT OSS 120B": ("gpt-oss-120b", "mbridge-2602-dgx-h100-gpt-oss-120b-bf16-64gpu"),
    "Qwen3_30B_a3B": ("qwen3-30b-a3b", "mbridge-2602-dgx-h100-qwen3-30b-a3b-fp8-16gpu"),
    "Qwen3_235B_a22B": ("qwen3-235b-a22b", "mbridge-2602-dgx-h100-qwen3-235b-a22b-fp8-256gpu"),
}
# the fine-tuning tables: packed SQuAD, LoRA on linear_qkv (NeMo's fine-tuning config, as nemo_cases.json)
TASK_TEMPLATE = {"SFT": "nemo2407-llama2-70b-sft-16gpu", "LoRA": "nemo2407-llama2-70b-lora-8gpu"}
SKIPPED = {"Kimi_K2": "Kimi-K2 trained with the Muon optimizer (the table's note), not modelled",
           "Nemotron_3_Nano": "hybrid Mamba-Transformer Nemotron 3, not in the catalog",
           "Nemotron_3_Super": "hybrid Mamba-Transformer Nemotron 3, not in the catalog"}
SYSTEMS = {"DGX-H100": "H100 SXM 80GB (DGX-H100)", "DGX-B200": "B200 (DGX-B200)", "DGX-B300": "B300 (DGX-B300)",
           "DGX-GB200": "GB200 (DGX-GB200)", "DGX-GB300": "GB300 (DGX-GB300)"}
COMPUTE = {"FP8": "FP8 GEMMs (Transformer Engine)", "MXFP8": "MXFP8 GEMMs (Transformer Engine)", "BF16": "BF16"}


def _cell(text: str) -> str:
    return re.sub(r"\[\^[^\]]*\]", "", text).strip()


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def rows(markdown: str, containers: set[str]) -> list[dict]:
    """(container, task, model, {column: cell}) of every table row in the named containers."""
    out, container, task, model, header = [], "", "Pre-Training", "", None
    for line in markdown.splitlines():
        if m := re.match(r"## (\S+) NeMo Container", line):
            container = m.group(1)
        elif m := re.match(r"### (\S+) Performance", line):
            task = m.group(1)
        elif m := re.match(r"#### Model: (.+)", line):
            model, header = m.group(1).strip(), None
        elif line.startswith("| System"):
            header = [_cell(c) for c in line.strip("|").split("|")]
        elif line.startswith("| DGX") and header and container in containers:
            cells = [_cell(c) for c in line.strip("|").split("|")]
            out.append({"container": container, "task": task, "model": model, "line": line.strip(),
                        **dict(zip(header, cells))})
    return out


def case(row: dict, templates: dict[str, dict], commit: str) -> dict | str:
    """The row as a case, or why it is left out."""
    if row["model"] in SKIPPED:
        return SKIPPED[row["model"]]
    if row["model"] not in MODELS:
        return f"model {row['model']} not in the catalog"
    if row["Precision"] not in COMPUTE:
        return f"precision {row['Precision']} not modelled"
    slug, base = MODELS[row["model"]]
    task = row["task"]
    c = copy.deepcopy(templates[TASK_TEMPLATE.get(task, base)])
    if task in TASK_TEMPLATE:
        c["model"] = copy.deepcopy(templates[base]["model"])
    gpus, mbs, gbs = int(row["#-GPUs"]), int(row["MBS"]), int(row["GBS"])
    tp, pp, cp = (_int(row[k]) or 1 for k in ("TP", "PP", "CP"))
    ep, vp, fsdp = _int(row["EP"]), _int(row["VP"]), _int(row.get("FSDP", "0")) or 0
    system = row["System"]
    kind = {"Pre-Training": "pretrain", "SFT": "sft", "LoRA": "lora"}[task]
    c["id"] = (f"mbridge-{row['container'].replace('.', '')}-{system.lower()}-{slug}-{kind}-"
               f"{row['Precision'].lower()}-{gpus}gpu" + (f"-gbs{gbs}" if gbs > 4096 and slug == "deepseek-v3" else ""))
    c.update(micro_batch=mbs, global_batch=gbs, grad_accum=None, seq_len=int(row["Sequence Length"]))
    c["precision"] = {**c["precision"], "compute": COMPUTE[row["Precision"]]}
    c["gpus"] = {"type": SYSTEMS[system], "count": gpus}
    c["parallel"] = {**c["parallel"], "tp": tp, "pp": pp, "cp": cp, "ep": ep, "dp": gpus // (tp * pp * cp),
                     "fsdp": f"Megatron-FSDP size {fsdp}" if fsdp else None,
                     "other": f"VP={row['VP']}; DP derived as GPUs/(TP*PP*CP)"}
    c["framework"] = (f"Megatron-Bridge, NeMo {row['container']} container, performance recipes under "
                      "scripts/performance")
    c["measured"] = {"tokens_per_s_per_gpu": float(row["Tokens / sec / GPU"]),
                     "tflops_per_gpu": float(row["Model TFLOP / sec / GPU"]),
                     "what": "Tokens/sec/GPU and Model TFLOP/sec/GPU as tabulated"}
    c["source"] = {"url": f"https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/{commit}/docs/"
                          "performance-summary-archive.md",
                   "repo": "NVIDIA-NeMo/Megatron-Bridge", "path": "docs/performance-summary-archive.md",
                   "commit": commit,
                   "where": f"{row['container']} NeMo Container, {task} Performance, Model: {row['model']}",
                   "quote": row["line"]}
    c["notes"] = ("Table has no GA column (GBS / (MBS x DP) micro-batches). MoE benchmarks force-balance tokens "
                  "among experts (the page's footnote)." + (f" VP {vp}." if vp else ""))
    if task in TASK_TEMPLATE:
        c["notes"] += " Fine-tuning settings (packed SQuAD, LoRA on linear_qkv) as NeMo's fine-tuning config has them."
    c["confidence"] = "medium"
    return c


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("archive", type=Path)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--containers", nargs="+", required=True)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    dev2 = json.loads(DEV2.read_text())
    templates = {c["id"]: c for c in (dev2 if isinstance(dev2, list) else dev2["cases"])}
    templates.update({c["id"]: c for c in json.loads(NEMO.read_text())["cases"]})
    cases, left = [], {}
    for row in rows(args.archive.read_text(), set(args.containers)):
        made = case(row, templates, args.commit)
        if isinstance(made, str):
            left[made] = left.get(made, 0) + 1
        else:
            cases.append(made)
    about = (f"Megatron-Bridge's performance-summary archive (docs/performance-summary-archive.md @{args.commit[:8]}), "
             f"containers {', '.join(args.containers)} (newer than the dev set's), written by "
             "tools/build_mbridge_cases.py in the shared/ground_truth case schema. Left out: "
             + "; ".join(f"{n} rows: {why}" for why, n in sorted(left.items()))
             + ". Nothing is fitted to them.")
    args.out.write_text(json.dumps({"about": about, "cases": cases}, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases; left out: {left}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
