"""Build src/trainplan/catalog/data/datasets.toml: sample-length statistics of public fine-tuning datasets.

    python tools/build_dataset_catalog.py --doc PATH/TO/Supported-models-and-datasets.md \
        --llamafactory-info PATH/TO/LLaMA-Factory/data/dataset_info.json

Input (read once, never at runtime): ms-swift's dataset table, docs/source_en/Instruction/
Supported-models-and-datasets.md, section "Datasets", at modelscope/ms-swift commit SWIFT_COMMIT. Each row
gives the ModelScope id, its subsets, the number of samples and "Statistic (token)": mean +- standard
deviation, min and max tokens of a sample, counted with the Qwen2.5 tokenizer (the table's own note;
scripts/utils/run_dataset_info.py). Rows without a statistic ("huge dataset", "-") are left out.

ALIASES adds names the table does not carry, each with the reason in ALIAS_NOTES.

LLaMA-Factory names its datasets in data/dataset_info.json (hiyouga/LLaMA-Factory at LLAMAFACTORY_COMMIT):
a name (`dataset: alpaca_gpt4_zh`) -> hf_hub_url / ms_hub_url / om_hub_url. Every name whose hub id is a
catalog dataset (or an alias above) becomes that entry's `llamafactory_names`; local demo files
(`identity`, `alpaca_en_demo`) have no hub id and stay unknown.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SWIFT_COMMIT = "3602360a562313afbf2ef6065fdf61f271a2c5b9"
LLAMAFACTORY_COMMIT = "ff6d4d12eeb035d6ce06805a5733dd7b29f2ac30"
SOURCE = (f"modelscope/ms-swift docs/source_en/Instruction/Supported-models-and-datasets.md@{SWIFT_COMMIT[:12]}, "
          "Datasets table, 'Statistic (token)' (Qwen2.5 tokenizer)")

# Names users write for a dataset the table lists under another id: alias -> the table's ModelScope id.
ALIASES: dict[str, list[str]] = {
    "AI-ModelScope/alpaca-cleaned": ["tatsu-lab/alpaca", "alpaca", "llamafactory/alpaca_en"],
    "AI-ModelScope/alpaca-gpt4-data-en": ["llamafactory/alpaca_gpt4_en"],
    "AI-ModelScope/alpaca-gpt4-data-zh": ["silk-road/alpaca-data-gpt4-chinese"],
}
ALIAS_NOTES: dict[str, str] = {
    "tatsu-lab/alpaca": "Stanford Alpaca's 52,002 samples; the table lists its cleaned release (yahma/alpaca-cleaned, "
                        "51,760 samples, the same instructions with malformed ones fixed or removed, per its card)",
    "alpaca": "Stanford Alpaca (tatsu-lab/alpaca), read as its cleaned release yahma/alpaca-cleaned",
    "silk-road/alpaca-data-gpt4-chinese": "the Alpaca instructions answered by GPT-4 in Chinese, as "
                                          "llm-wizard/alpaca-gpt4-data-zh is (the table's row)",
    "llamafactory/alpaca_en": "LLaMA-Factory's copy of Stanford Alpaca, read as its cleaned release "
                              "yahma/alpaca-cleaned",
    "llamafactory/alpaca_gpt4_en": "LLaMA-Factory's copy of the GPT-4 Alpaca answers (52,002 samples), as "
                                   "vicgalle/alpaca-gpt4 is (the table's row)",
}

_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_STAT = re.compile(r"^([\d.]+)±([\d.]+), min=(\d+), max=(\d+)$")


def _cell(text: str) -> str:
    m = _LINK.search(text)
    return (m.group(1) if m else text).strip()


def rows(doc: str) -> list[dict]:
    """The table's rows that carry a statistic, as catalog entries."""
    section = doc.split("\n## Datasets", 1)[1]
    out = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6:
            continue
        ms_id, subsets, size, stat, tags, hf_id = cells
        m = _STAT.match(stat)
        if not m or not size.isdigit():
            continue
        entry = {"id": _cell(ms_id) if ms_id != "-" else _cell(hf_id),
                 "hf_id": _cell(hf_id) if hf_id != "-" else "",
                 "subsets": [s for s in subsets.split("<br>") if s],
                 "samples": int(size), "mean_tokens": float(m.group(1)), "std_tokens": float(m.group(2)),
                 "min_tokens": int(m.group(3)), "max_tokens": int(m.group(4)),
                 "tags": [t.strip() for t in tags.split(",") if t.strip() and t.strip() != "🔥"],
                 "source": SOURCE}
        out.append(entry)
    return out


def llamafactory_names(info: dict, entries: list[dict]) -> dict[str, list[str]]:
    """Catalog id -> the LLaMA-Factory dataset_info.json names whose hub id is that entry's id, Hugging Face id,
    alias or (unique) repository name (module docstring)."""
    keys: dict[str, str] = {}
    bases: dict[str, set[str]] = {}
    for e in entries:
        for name in (e["id"], e.get("hf_id") or "", *ALIASES.get(e["id"], [])):
            if name:
                keys[name.lower()] = e["id"]
                bases.setdefault(name.lower().rpartition("/")[2], set()).add(e["id"])
    out: dict[str, list[str]] = {}
    for name, spec in info.items():
        for hub in ("hf_hub_url", "ms_hub_url", "om_hub_url"):
            url = str(spec.get(hub) or "").lower()
            found = keys.get(url) or (next(iter(bases[url.rpartition("/")[2]]))
                                      if len(bases.get(url.rpartition("/")[2], ())) == 1 else None)
            if url and found:
                out.setdefault(found, []).append(name)
                break
    return out


def _value(value) -> str:
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return repr(value)


def render(entries: list[dict], lf_names: dict[str, list[str]] | None = None) -> str:
    lines = ["# Sample lengths of public fine-tuning datasets, in tokens of one sample (prompt and answer, "
             "templated).", "# Generated by tools/build_dataset_catalog.py from " + SOURCE + ".",
             "# Token counts are the Qwen2.5 tokenizer's: other tokenizers count the same text differently.", ""]
    by_id = {e["id"]: e for e in entries}
    for ms_id, names in ALIASES.items():
        by_id[ms_id]["aliases"] = names
        by_id[ms_id]["alias_notes"] = [ALIAS_NOTES[n] for n in names]
    for ms_id, names in (lf_names or {}).items():
        by_id[ms_id]["llamafactory_names"] = names
        by_id[ms_id]["llamafactory_source"] = (f"hiyouga/LLaMA-Factory data/dataset_info.json@{LLAMAFACTORY_COMMIT[:12]} "
                                               "(hf_hub_url / ms_hub_url / om_hub_url)")
    for e in entries:
        lines.append("[[dataset]]")
        lines += [f"{key} = {_value(value)}" for key, value in e.items() if value not in ("", [])]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--doc", required=True, type=Path, help="ms-swift Supported-models-and-datasets.md (English)")
    ap.add_argument("--llamafactory-info", type=Path, help="LLaMA-Factory's data/dataset_info.json")
    ap.add_argument("--out", type=Path, default=ROOT / "src" / "trainplan" / "catalog" / "data" / "datasets.toml")
    args = ap.parse_args(argv)
    entries = rows(args.doc.read_text(encoding="utf-8"))
    ids = [e["id"] for e in entries]
    if len(set(ids)) != len(ids):
        print("duplicate dataset ids in the table", file=sys.stderr)
        return 1
    lf = {}
    if args.llamafactory_info is not None:
        import json

        lf = llamafactory_names(json.loads(args.llamafactory_info.read_text(encoding="utf-8")), entries)
    args.out.write_text(render(entries, lf), encoding="utf-8")
    print(f"wrote {len(entries)} datasets to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
