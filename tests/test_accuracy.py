"""`trainplan accuracy`: per-case predictions and errors, the summary, calibrated values that come
only from the other sources (leave-one-source-out)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from trainplan.cases.accuracy import evaluate, summarize
from trainplan.cases import PREDICTED_KEYS
from trainplan.cli import main

from test_ledger import CASES

DEV = Path(__file__).resolve().parents[2] / "shared" / "ground_truth" / "published_dev.json"
needs_dev = pytest.mark.skipif(not DEV.exists(), reason="shared/ground_truth not here")


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


@needs_dev
def test_dev_set_coverage_and_time_accuracy():
    results = evaluate(json.loads(DEV.read_text()))
    s = summarize(results)
    memory, time = s["by_kind"]["memory"], s["by_kind"]["time"]
    assert memory["predicted"] >= 0.8 * memory["cases"] and time["predicted"] >= 0.7 * time["cases"]
    assert time["raw"]["median_abs"] <= 0.20
    assert memory["raw"]["median_abs"] <= 0.25      # regression guard; the 8% goal is open (see report)
    assert set(s["by_source"]["memory"]) == {"Lightning-AI/litgpt", "QwenLM/Qwen", "huggingface/peft",
                                             "pytorch/torchtune"}
