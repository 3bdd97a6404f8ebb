"""Blocks the spot-case builders (tools/build_*_cases.py) write alike: one home for their shape.

A case names its model by hf_id and leaves the architecture fields null: the case reader takes them from
the catalog entry of that hf_id (trainplan.cases.common.case_model), as the ground-truth schema allows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable

DATA = Path(__file__).resolve().parents[1] / "benchmarks" / "data"

ARCH_FIELDS = ("layers", "hidden", "heads", "kv_heads", "intermediate", "vocab", "tied_embeddings", "moe")

# pre-training in bf16 with fp32 master weights and Adam states (Megatron's distributed optimizer, InternEvo)
BF16_PRETRAIN_PRECISION = {"weights": "bf16", "compute": "bf16", "master_weights": "fp32", "optimizer_states": "fp32"}


def catalog_model(name: str, hf_id: str, params_b: float, **extra: object) -> dict:
    """A case's model block: its name, hf_id and nominal size, the architecture fields null (read from the
    catalog), then `extra` (e.g. arch_source=None)."""
    return {"name": name, "hf_id": hf_id, "params_b": params_b, **dict.fromkeys(ARCH_FIELDS), **extra}


def github_source(repo: str, commit: str, path: str, where: str, quote: str) -> dict:
    """A case's source block for a file of a GitHub repository at one commit."""
    return {"url": f"https://github.com/{repo}/blob/{commit}/{path}", "repo": repo, "path": path, "commit": commit,
            "where": where, "quote": quote}


def write_cases(out: Path, about: str, cases: list[dict]) -> None:
    """Write a spot-case file (benchmarks/data/*_cases.json: {"about", "cases"}) and say how many cases it holds."""
    out.write_text(json.dumps({"about": about, "cases": cases}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(cases)} case{'s' if len(cases) != 1 else ''} to {out}")


def run_builder(doc: str, name: str, about: str, build: Callable[[], list[dict]]) -> None:
    """A builder's command line: `--out` (default benchmarks/data/NAME), where the cases `build()` makes are written."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DATA / name)
    write_cases(parser.parse_args().out, about, build())
