"""README.md's figures cannot go stale: every generated block equals what tools/readme_figures.py
computes from today's code and data, and the golden reports of README's setups equal today's
estimates (regenerate both on purpose: `python tools/readme_figures.py --write`, and review the diff)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _figures():
    path = ROOT / "tools" / "readme_figures.py"
    spec = importlib.util.spec_from_file_location("readme_figures", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["readme_figures"] = module
    spec.loader.exec_module(module)
    return module


FIGURES = _figures()
FAST = [name for name in FIGURES.BLOCKS if name != "trace-agreement"]


def test_readme_holds_every_block_once():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    names = [m.group("name") for m in FIGURES.BLOCK.finditer(text)]
    assert sorted(names) == sorted(FIGURES.BLOCKS)


@pytest.mark.parametrize("name", FAST)
def test_readme_block_is_current(name):
    assert FIGURES.readme_blocks()[name] == FIGURES.BLOCKS[name](), \
        f"README.md block {name!r} is stale: python tools/readme_figures.py --write"


@pytest.mark.trace
def test_readme_trace_agreement_is_current():
    """The 53 traced steps (about a minute on two cores)."""
    assert FIGURES.readme_blocks()["trace-agreement"] == FIGURES.trace_agreement()


@pytest.mark.parametrize("name", sorted(FIGURES.REPORT_SETUPS))
def test_golden_report_is_current(name):
    path = FIGURES.REPORTS / f"{name}.json"
    golden = json.loads(path.read_text(encoding="utf-8"))           # a missing golden file fails here
    assert FIGURES.reports()[name] == golden, f"{path.name} differs: python tools/readme_figures.py --write"


def test_the_golden_seed_chain_is_the_article_by_hand():
    """The seed chain's report against the article's arithmetic (shared/seeds/003): 10,000 samples /
    32 per step = 313 steps per epoch (ceil), x 3 epochs = 939; 27.08 CNY per GPU-hour; retry x3."""
    report = json.loads((FIGURES.REPORTS / "seed-chain.json").read_text(encoding="utf-8"))
    t, c = report["time"], report["cost"]
    assert t["steps"] == 939
    assert c["price_per_gpu_hour"] == 27.08 and c["currency"] == "CNY"
    assert c["total"] == pytest.approx(t["total_s"] / 3600 * 27.08 * 3)


def test_spot_row_counts_quoted_are_the_files():
    """The row counts README's "Published runs outside both sets" paragraph quotes are the rows of the files it
    names (each file's count: the numbers of rows said since the previous file)."""
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("**Published runs outside both sets**")
    para = text[start:text.index("\n\n", start)]
    pieces = re.split(r"\(benchmarks/data/([\w.]+)", para)
    checked = 0
    for said, name in zip(pieces[0::2], pieces[1::2]):
        quoted = sum(int(n) for n in re.findall(r"(\d+) (?:throughput )?(?:rows?|figures?)\b", said))
        data = json.loads((ROOT / "benchmarks" / "data" / name).read_text())
        assert quoted == len(data.get("rows", data.get("cases", ()))), name
        checked += 1
    assert checked == 23
