"""tools/build_litgpt_config_hub_cases.py: the length of each run litgpt's `fit` makes (litgpt/finetune/lora.py and
full.py at 5895df10), derived by hand, and the file in benchmarks/data being what the builder writes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import build_litgpt_config_hub_cases as builder  # noqa: E402


@pytest.mark.parametrize("args, steps, validations, evaluated", [
    # Llama-2-7B LoRA: 4 epochs x ceil(1900 / 2) = 3800 micro-batches, 4 a step -> 950 steps; a validation every 100
    # steps -> 9, each the whole 100-sample set (50 batches of 2) + the 2-batch sanity check: 9 x 100 + 4 = 904
    ((1, 8, 2, 4, None, 100, 100), 950, 9, 904),
    # Gemma-2B LoRA: 2 x 950 micro-batches, 3 a step -> 633.33 steps; every 25 -> 25 validations: 25 x 100 + 4
    ((1, 6, 2, 2, None, 25, 100), 1900 / 3, 25, 2504),
    # Gemma-2B full on 4 devices: ceil(1900 / 4) = 475 micro-batches a rank, 4 a step, max_steps 50 -> 50 steps;
    # 2 validations of ceil(100 / 4) = 25 batches a rank, + 2 sanity batches, x 4 ranks: (2 x 25 + 2) x 4 = 208
    ((4, 16, 1, 1, 50, 25, 100), 50, 2, 208),
])
def test_run_length_by_hand(args, steps, validations, evaluated):
    got = builder.run_length(*args)
    assert got[0] == pytest.approx(steps) and got[1:] == (validations, evaluated)


def test_the_file_is_what_the_builder_writes():
    data = json.loads((ROOT / "benchmarks" / "data" / "litgpt_config_hub_cases.json").read_text(encoding="utf-8"))
    assert data == {"about": builder.ABOUT, "cases": builder.cases()}
    assert len(data["cases"]) == 2 * len(builder.ROWS) == 68
