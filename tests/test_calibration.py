"""Calibration: terms fitted from measured runs, their bands, group fallback, storage, the
estimate-side lookup (cheap, no SQLAlchemy) and `trainplan calibrate`."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from trainplan.cases.accuracy import leave_one_source_out
from trainplan.ledger import calibration as cal
from trainplan.ledger.calibration_fit import Observation, fit
from trainplan.memory.overhead import RESERVE_FIXED_BYTES

GIB = 2**30
SRC = str(Path(__file__).resolve().parents[1] / "src")


def estimate(alloc_gib: float, step_s: float = 2.0) -> dict:
    alloc = alloc_gib * GIB
    reserved = alloc * 1.05 + RESERVE_FIXED_BYTES
    return {"peak_allocated_bytes": int(alloc), "peak_reserved_bytes": int(reserved),
            "device_bytes": int(reserved + 0.5 * GIB), "step_s": step_s, "tokens_per_s_per_gpu": 4096 / step_s,
            "tflops_per_gpu": 100.0, "mfu": 0.3, "gpu_hours": None}


def obs(source: str, alloc_gib: float, measured: dict, framework="hf", gpu="a100-sxm4-80gb", method="lora",
        step_s: float = 2.0) -> Observation:
    return Observation(source=source, framework=framework, gpu=gpu, method=method,
                       estimate=estimate(alloc_gib, step_s), measured=measured)


def measured(alloc_gib=None, reserved_gib=None, device_gib=None, tokens=None) -> dict:
    out = {}
    for key, value in (("peak_allocated_bytes", alloc_gib), ("peak_reserved_bytes", reserved_gib),
                       ("device_bytes", device_gib)):
        if value is not None:
            out[key] = value * GIB
    if tokens:
        out["tokens_per_s_per_gpu"] = tokens
    return out


def runs_with_scale(scale: float, source: str = "a", n: int = 4, **kw) -> list[Observation]:
    return [obs(source, 10.0 + i, measured(alloc_gib=(10.0 + i) * scale * (1 + 0.01 * (-1) ** i)), **kw)
            for i in range(n)]


def test_alloc_scale_fitted_with_a_band():
    fitted = fit(runs_with_scale(1.1), min_runs=3)
    term, group = fitted.term("alloc_scale", "hf", "a100-sxm4-80gb", "lora")
    assert term.value == pytest.approx(1.1, rel=0.01) and 0 < term.sigma < 0.02 and term.n == 4
    assert group.level == ("framework", "gpu", "method")


def test_reserve_device_and_time_terms():
    runs = [obs("a", 20, measured(alloc_gib=20, reserved_gib=20 * 1.10 + RESERVE_FIXED_BYTES / GIB,
                                  device_gib=20 * 1.10 + RESERVE_FIXED_BYTES / GIB + 1.5, tokens=4096 / 2.0 * 0.8))
            for _ in range(3)]
    fitted = fit(runs, min_runs=3)
    f, _ = fitted.term("reserve_fraction", "hf", "a100-sxm4-80gb", "lora")
    d, _ = fitted.term("device_overhead_bytes", "hf", "a100-sxm4-80gb", "lora")
    t, _ = fitted.term("time_factor", "hf", "a100-sxm4-80gb", "lora")
    assert f.value == pytest.approx(0.10) and d.value == pytest.approx(1.0 * GIB, rel=1e-6)
    assert t.value == pytest.approx(0.8)
    mid, lo, hi = cal.adjust(estimate(20), fitted, framework="hf", gpu="a100-sxm4-80gb", method="lora")
    assert mid["device_bytes"] == pytest.approx(runs[0].measured["device_bytes"], rel=1e-6)
    assert mid["step_s"] == pytest.approx(2.0 / 0.8)
    assert lo["device_bytes"] <= mid["device_bytes"] <= hi["device_bytes"]


def test_device_only_measurements_calibrate_allocated_through_the_overheads():
    runs = [obs("a", a, measured(device_gib=(a * 1.2) * 1.05 + RESERVE_FIXED_BYTES / GIB + 0.5)) for a in (8, 12, 16)]
    term, _ = fit(runs, min_runs=3).term("alloc_scale", "hf", "a100-sxm4-80gb", "lora")
    assert term.value == pytest.approx(1.2, rel=1e-6)


def test_groups_fall_back_to_coarser_levels_and_respect_min_runs():
    runs = runs_with_scale(1.2, gpu="h100-sxm", n=2) + runs_with_scale(1.2, gpu="a100-sxm4-80gb", n=2)
    fitted = fit(runs, min_runs=3)
    term, group = fitted.term("alloc_scale", "hf", "h100-sxm", "lora")
    assert group.level == ("framework", "method") and term.n == 4
    assert fitted.term("alloc_scale", "hf", "h100-sxm", "full")[1].level == ("framework",)
    # another framework gets no alloc_scale from these hf runs (it is framework-specific)
    assert fitted.term("alloc_scale", "torchtune", "h100-sxm", "full") is None
    assert fit(runs[:2], min_runs=3).groups == ()


def test_json_round_trip_and_active_lookup(tmp_path, monkeypatch):
    fitted = fit(runs_with_scale(1.1), min_runs=3, provenance={"created_at": "2025-01-01T00:00:00+00:00"})
    path = tmp_path / "cal.json"
    monkeypatch.setenv("TRAINPLAN_CALIBRATION", str(path))
    assert cal.load_active() is None
    cal.save(fitted)
    again = cal.load_active()
    assert again == cal.from_json(json.loads(path.read_text())) and again.groups == fitted.groups
    assert cal.load_active() is again                  # parsed once, then cached by mtime
    path.write_text("{broken")
    import os

    os.utime(path, (1, 1))
    assert cal.load_active() is None                    # unreadable: no calibration, never an error


def test_calibrated_estimate_keeps_breakdown_sums_and_says_so():
    from trainplan.job.options import JobOptions
    from trainplan.job.resolve import (
        build_layout,
        build_setup,
        build_workload,
        resolve_gpu,
    )
    from trainplan.memory import estimate_memory
    from trainplan.timing.estimate import estimate_time

    req = JobOptions(model="llama-2-7b", method="lora", gpu="a100-80gb", samples=1000)
    gpu = resolve_gpu(req.gpu)
    setup, layout = build_setup(req), build_layout(req, gpu)
    mem = estimate_memory(setup, layout, gpu)
    time = estimate_time(setup, layout, gpu, build_workload(req))
    runs = [obs("a", 1, measured(alloc_gib=1.1), framework="hf", gpu="a100-sxm4-80gb", method="lora", step_s=1.0)
            for _ in range(3)]
    runs = [Observation(**{**o.__dict__, "measured": {**o.measured, "step_s": 1.25}}) for o in runs]
    fitted = fit(runs, min_runs=3)
    mem2, time2, note = cal.calibrate_estimate(mem, time, setup, layout, calibration=fitted)
    assert mem2.peak_allocated_bytes == pytest.approx(mem.peak_allocated_bytes * 1.1, rel=1e-6)
    assert sum(mem2.components_bytes.values()) == mem2.peak_allocated_bytes
    assert mem2.device_bytes > mem.device_bytes and "calibrated" in note and "band" in note
    assert time2.step_s == pytest.approx(time.step_s * 1.25) and time2.breakdown.total_s == pytest.approx(time2.step_s)
    assert time2.gpu_hours == pytest.approx(time.gpu_hours * 1.25)
    other = build_setup(JobOptions(model="llama-2-7b", method="full", framework="torchtune"))
    assert cal.apply((mem, time), other, layout, calibration=fit([], min_runs=3)) == (None, None)


def test_leave_one_source_out_never_uses_the_source_itself():
    runs = runs_with_scale(2.0, source="a") + runs_with_scale(1.0, source="b")
    report = leave_one_source_out(runs, min_runs=3)["memory"]["by_source"]
    # source a is corrected with b's fit (scale 1.0): its calibrated error stays its raw error
    assert report["a"]["calibrated"]["median_abs"] == pytest.approx(report["a"]["raw"]["median_abs"], rel=1e-3)
    assert report["a"]["raw"]["median_abs"] == pytest.approx(0.5, abs=0.01)


def test_estimate_path_does_not_import_sqlalchemy(tmp_path):
    code = ("import sys, io, contextlib, trainplan, trainplan.ledger.calibration\n"
            "from trainplan.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    assert main(['estimate', '--model', 'llama-2-7b', '--json']) == 0\n"
            "trainplan.ledger.calibration.load_active()\n"
            "bad = [m for m in ('sqlalchemy', 'alembic', 'psycopg') if m in sys.modules]\n"
            "assert not bad, bad\n")
    env = {"PYTHONPATH": SRC, "TRAINPLAN_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_calibrate_command_writes_terms_with_provenance(tmp_path, monkeypatch, capsys):
    import sqlalchemy  # noqa: F401

    from trainplan.cli import main
    from trainplan.ledger import store
    from trainplan.ledger.records import RunRecord

    monkeypatch.setenv("TRAINPLAN_DATA_DIR", str(tmp_path / "data"))
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    records = []
    for source, scale in (("team-a", 1.10), ("team-b", 1.12), ("team-c", 1.08)):
        for i, o in enumerate(runs_with_scale(scale, source=source, n=3)):
            records.append(RunRecord(source=source, setup={"model": "llama-2-7b", "resolved": {
                "framework": "hf", "gpu": "a100-sxm4-80gb", "method": "lora"}}, measured=o.measured,
                estimate=o.estimate, external_id=f"{source}-{i}"))
    store.add_runs(store.engine_for(url), records)
    out_path = tmp_path / "cal.json"
    assert main(["calibrate", "--db", url, "--out", str(out_path)]) == 0
    text = capsys.readouterr().out
    assert "leave-one-source-out" in text and "hf x a100-sxm4-80gb x lora" in text
    data = json.loads(out_path.read_text())
    assert data["format"] == cal.FORMAT and data["provenance"]["runs_used"] == 9
    assert set(data["provenance"]["sources"]) == {"team-a", "team-b", "team-c"}
    loso = data["provenance"]["leave_one_source_out"]["memory"]["all"]
    assert loso["calibrated"]["median_abs"] < loso["raw"]["median_abs"]
    fitted = cal.from_json(data)
    assert math.isclose(fitted.term("alloc_scale", "hf", "a100-sxm4-80gb", "lora")[0].value, 1.10, rel_tol=0.02)
    store.dispose_all()


def test_calibrate_empty_ledger_is_one_line(tmp_path, monkeypatch, capsys):
    import sqlalchemy  # noqa: F401

    from trainplan.cli import main
    from trainplan.ledger import store

    monkeypatch.setenv("TRAINPLAN_DATA_DIR", str(tmp_path / "data"))
    assert main(["calibrate", "--db", f"sqlite:///{tmp_path / 'e.sqlite'}"]) == 2
    assert "no run with an estimate" in capsys.readouterr().err
    store.dispose_all()


# --- issue 16: per-ledger files, what calibrate could not fit, the planner's fast path -------------------

def test_each_ledger_has_its_own_calibration_file(tmp_path, monkeypatch):
    from trainplan.ledger.paths import calibration_path, db_url

    monkeypatch.delenv("TRAINPLAN_CALIBRATION", raising=False)
    monkeypatch.setenv("TRAINPLAN_DATA_DIR", str(tmp_path / "data"))
    team, scratch = str(tmp_path / "team.sqlite"), str(tmp_path / "scratch.sqlite")
    a, b = calibration_path(db=team), calibration_path(db=scratch)
    assert a != b and Path(a).parent == tmp_path / "data" / "calibrations" and Path(a).name.startswith("team.sqlite-")
    assert calibration_path(db=team) == calibration_path(db=db_url(team))      # a path and its URL: one ledger
    monkeypatch.setenv("TRAINPLAN_DB", team)
    assert calibration_path() == a
    monkeypatch.setenv("TRAINPLAN_CALIBRATION", str(tmp_path / "one.json"))
    assert calibration_path(db=scratch) == str(tmp_path / "one.json")      # one named file wins for every ledger
    monkeypatch.delenv("TRAINPLAN_CALIBRATION")
    fitted = fit(runs_with_scale(1.1), min_runs=3, provenance={"db": db_url(team)})
    cal.save(fitted, db=team)
    assert cal.load_active(db=team) == fitted and cal.load_active() == fitted and cal.load_active(db=scratch) is None


def test_coverage_says_what_each_group_lacks():
    from trainplan.ledger.calibration_fit import coverage

    runs = runs_with_scale(1.1, n=4) + runs_with_scale(1.2, n=2, gpu="rtx4090")
    fitted = fit(runs, min_runs=3)
    by_gpu = {c.key[1]: c for c in coverage(runs, fitted)}
    assert by_gpu["a100-sxm4-80gb"].fitted == ("alloc_scale",) and not by_gpu["a100-sxm4-80gb"].missing
    small = by_gpu["rtx4090"]
    assert small.runs == 2 and small.fitted == () and small.missing == {"alloc_scale": (2, 1)}
    assert small.falls_back_to == {"alloc_scale": "hf x lora"}          # the 6 hf lora runs pooled
    assert small.to_dict()["missing"]["alloc_scale"] == {"runs": 2, "needs": 1, "falls_back_to": "hf x lora"}


def test_calibrated_device_is_the_estimates_and_the_planner_agrees():
    from trainplan.estimation import estimate
    from trainplan.job.options import JobOptions
    from trainplan.job.resolve import resolve_job
    from trainplan.planner.plan import plan
    from trainplan.planner.request import resolve_plan

    runs = [obs(s, 10.0, measured(alloc_gib=11.2, reserved_gib=12.6, device_gib=13.4), gpu="rtx4090",
                method="qlora") for s in "abc"]
    fitted = fit(runs, min_runs=3)
    opts = JobOptions(model="llama-2-7b", method="qlora", gpu="4090", batch_size=2, seq_len=2048, grad_ckpt="full",
                      attention="flash")
    raw = estimate(resolve_job(opts, calibration=None))
    est = estimate(resolve_job(opts, calibration=fitted))
    m = raw.memory
    views = (m.peak_allocated_bytes, m.peak_reserved_bytes, m.device_bytes)
    device = cal.calibrated_device(views, fitted, framework="hf", gpu="rtx4090", method="qlora")
    assert device == est.memory.device_bytes and device > m.device_bytes
    pr = resolve_plan(opts, gpus=("4090",), max_gpus=1, global_batch=2)
    from trainplan.frozen import replace

    pr = replace(pr, job=replace(pr.job, calibration=fitted, recorded=None))
    result = plan(pr, details=True)
    assert [p.found.knobs.batch_size for p in result.plans] == [2, 1]
    for p in result.plans:
        assert p.found.calibrated and p.found.device_bytes == p.estimate.memory.device_bytes
