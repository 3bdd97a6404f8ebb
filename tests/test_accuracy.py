"""`trainplan accuracy`: per-case predictions and errors, the summary, calibrated values that come
only from the other sources (leave-one-source-out)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from test_ledger import CASES
from trainplan.cases import PREDICTED_KEYS
from trainplan.cases.accuracy import evaluate, summarize
from trainplan.cli import main

DATA = Path(__file__).resolve().parent / "data"
DEV, DEV2 = DATA / "published_dev.json", DATA / "published_dev2.json"


def test_json_shape(tmp_path, capsys):
    cases = copy.deepcopy(CASES)
    del cases[1]["measured"]                      # predicted anyway, error null
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(cases))
    assert main(["accuracy", "--cases", str(path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) == {"cases", "summary"}
    by_id = {c["id"]: c for c in data["cases"]}
    for c in data["cases"]:
        assert {"id", "kind", "predicted", "measured", "error", "skipped"} <= set(c)
    lit = by_id[CASES[0]["id"]]
    assert set(lit["predicted"]) == set(PREDICTED_KEYS) and lit["metric"] == "peak_allocated_bytes"
    assert lit["error"] == pytest.approx(lit["predicted"]["peak_allocated_bytes"] / (19.837 * 2**30) - 1, rel=1e-3)
    qwen = by_id[CASES[1]["id"]]
    assert qwen["predicted"]["step_s"] > 0 and qwen["measured"] is None and qwen["error"] is None
    t0 = by_id["peft-readme-T0_3B-lora"]
    assert t0["predicted"] is None and "encoder-decoder" in t0["skipped"]
    assert data["summary"]["by_kind"]["memory"]["skipped"] == 1


def test_text_report(tmp_path, capsys):
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(CASES))
    assert main(["accuracy", "--cases", str(path)]) == 0
    out = capsys.readouterr().out
    assert "summary" in out and "skipped 1" in out and CASES[0]["id"][:40] in out


def test_accuracy_tolerates_extra_fields_but_not_broken_files(tmp_path, capsys):
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([{**CASES[0], "surprise": True}, {**CASES[1], "id": "other", "kind": "energy"}]))
    assert main(["accuracy", "--cases", str(path), "--json"]) == 0     # an import refuses these (test_ledger)
    by_id = {c["id"]: c for c in json.loads(capsys.readouterr().out)["cases"]}
    assert by_id[CASES[0]["id"]]["error"] is not None and "energy" in by_id["other"]["skipped"]
    path.write_text("[{")
    assert main(["accuracy", "--cases", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "malformed JSON" in err


def test_calibrated_value_never_sees_its_own_source():
    cases = copy.deepcopy(CASES[:2])
    base = {r.id: r for r in evaluate(cases, min_runs=1)}
    cases[0]["measured"]["peak_mem_gib"] *= 3          # a source's own measurement changes ...
    again = {r.id: r for r in evaluate(cases, min_runs=1)}
    first = cases[0]["id"]
    assert again[first].calibrated == base[first].calibrated   # ... its calibrated prediction does not
    assert again[first].error != base[first].error


# What README.md states today (its accuracy blocks, printed by tools/readme_figures.py): median |error|
# (raw) by kind and source, and the cases predicted. The pins below fail when an estimate drifts more
# than 1.5x past a claim, or when fewer cases are predicted.
CLAIMS = {
    DEV: {"memory": {"predicted": 69, "all": 0.049, "Lightning-AI/litgpt": 0.023, "QwenLM/Qwen": 0.058,
                     "huggingface/peft": 0.254, "pytorch/torchtune": 0.097},
          "time": {"predicted": 61, "all": 0.066, "QwenLM/Qwen": 0.056, "meta-llama/llama": 0.174,
                   "meta-llama/llama3": 0.419, "mosaicml/llm-foundry": 0.038, "pytorch/torchtune": 0.084}},
    DEV2: {"memory": {"predicted": 43, "all": 0.075, "Ledzy/BAdam": 0.081, "QwenLM/Qwen2.5": 0.153,
                      "THUDM/ChatGLM3": 0.157, "ljm565/universal-llm-trainer": 0.062},
           "time": {"predicted": 63, "all": 0.109, "Dao-AILab/flash-attention": 0.050,
                    "NVIDIA-NeMo/Megatron-Bridge": 0.207, "QwenLM/Qwen2.5": 0.733, "jzhang38/EasyContext": 0.055,
                    "ljm565/universal-llm-trainer": 0.102}},
}


@pytest.fixture(scope="module", params=[DEV, DEV2], ids=["published_dev", "published_dev2"])
def summary(request):
    return request.param, summarize(evaluate(json.loads(request.param.read_text())))


@pytest.mark.parametrize("kind", ["memory", "time"])
def test_accuracy_stays_near_the_claims(summary, kind):
    path, s = summary
    claims = CLAIMS[path][kind]
    assert s["by_kind"][kind]["predicted"] >= claims["predicted"]
    assert s["by_kind"][kind]["raw"]["median_abs"] <= 1.5 * claims["all"]
    for source, claim in claims.items():
        if source in ("predicted", "all"):
            continue
        assert s["by_source"][kind][source]["raw"]["median_abs"] <= 1.5 * claim, source


def test_dev_set_coverage_and_time_accuracy():
    results = evaluate(json.loads(DEV.read_text()))
    s = summarize(results)
    memory, time = s["by_kind"]["memory"], s["by_kind"]["time"]
    assert memory["predicted"] >= 0.8 * memory["cases"] and time["predicted"] >= 0.7 * time["cases"]
    assert time["raw"]["median_abs"] <= 0.20
    assert memory["raw"]["median_abs"] <= 0.25      # regression guard; the 8% goal is open (see report)
    assert set(s["by_source"]["memory"]) == {"Lightning-AI/litgpt", "QwenLM/Qwen", "huggingface/peft",
                                             "pytorch/torchtune"}


def test_issue_19_targets():
    """Issue 19's must-show: dev memory median <= 6 %, time median <= 8 %; dev2 memory >= 85 % of the
    cases predicted, median <= 10 %, p90 <= 35 %."""
    dev = summarize(evaluate(json.loads(DEV.read_text())))["by_kind"]
    assert dev["memory"]["raw"]["median_abs"] <= 0.06 and dev["time"]["raw"]["median_abs"] <= 0.08
    memory = summarize(evaluate(json.loads(DEV2.read_text())))["by_kind"]["memory"]
    assert memory["predicted"] >= 0.85 * memory["cases"]
    assert memory["raw"]["median_abs"] <= 0.10 and memory["raw"]["p90_abs"] <= 0.35


def test_issue_13_targets():
    """Issue 13's must-show: dev time median <= 8 %; dev2 time >= 80 % of the cases predicted, median <= 15 %
    and p90 <= 50 % leave-one-source-out (each source's cases corrected by terms fitted without it)."""
    dev = summarize(evaluate(json.loads(DEV.read_text())))["by_kind"]["time"]
    assert dev["raw"]["median_abs"] <= 0.08
    time = summarize(evaluate(json.loads(DEV2.read_text())))["by_kind"]["time"]
    assert time["predicted"] >= 0.8 * time["cases"]
    assert time["calibrated"]["median_abs"] <= 0.15 and time["calibrated"]["p90_abs"] <= 0.50


def test_readme_expert_tensor_parallel_figure():
    """README's prose: the Megatron-SWIFT Qwen3-30B-A3B run (tp 2, ep 8, expert tp unset = tp under
    Megatron-Core) goes from -74% to -52% once its expert ranks span both nodes and gather over the pair."""
    case = next(c for c in json.loads(DEV2.read_text())
                if c["id"] == "qwen-docs-megatron-swift-qwen3-30b-a3b-full-16xa800-time")
    (result,) = [r for r in evaluate([case]) if r.kind == "time"]
    assert round(100 * result.error) == -52
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "from -74% to -52%" in " ".join(readme.split())
