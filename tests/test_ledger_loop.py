"""The ledger's loop (issue 16, items 3 and 4): record a run, calibrate, and estimate, plan and fit
change with a note; a setup recorded as having run never reads "does not fit"; a plain-path
TRAINPLAN_DB records into that SQLite file; a bad URL fails at once and writes nothing; each ledger
keeps its own calibration; calibrate says what it could not fit; runs --flush-spool.

The setup: Llama-2-7B QLoRA, full checkpointing, micro-batch 6 x 4,096 tokens on one RTX 4090. Its
raw estimate is 21.81 GiB device view (`trainplan estimate`), over the 4090's usable 21.38 GiB
(23.76 GiB x 0.9): DOES NOT FIT. The team ran it at 22.4 GiB (nvidia-smi), 1.4 GiB below capacity.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from trainplan.cli import main
from trainplan.ledger import calibration as cal
from trainplan.ledger import recorded, spool, store
from trainplan.ledger.paths import db_url

SRC = str(Path(__file__).resolve().parents[1] / "src")
GIB = 2**30
SETUP = ["--model", "llama-2-7b", "--method", "qlora", "--gpu", "4090", "--grad-ckpt", "full", "--seq-len", "4096"]
B6 = SETUP + ["--batch-size", "6"]
# (extra flags, device, reserved, allocated GiB): three runs of the hf x rtx4090 x qlora group
RUNS = [(["--batch-size", "6"], 22.4, 21.6, 19.5),
        (["--batch-size", "6", "--grad-accum", "2"], 22.9, 22.1, 19.9),
        (["--batch-size", "4"], 16.9, 16.1, 14.6)]


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    """A team ledger named by a plain path in $TRAINPLAN_DB (as most people write it)."""
    path = tmp_path / "team.sqlite"
    monkeypatch.setenv("TRAINPLAN_DB", str(path))
    monkeypatch.delenv("TRAINPLAN_CALIBRATION", raising=False)
    monkeypatch.chdir(tmp_path)
    yield path
    store.dispose_all()


def run_json(capsys, *argv: str) -> dict:
    capsys.readouterr()
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def record(capsys, runs=RUNS, *extra: str) -> None:
    for flags, device, reserved, allocated in runs:
        assert main(["record", *SETUP, *flags, "--device-gib", str(device), "--peak-reserved-gib", str(reserved),
                     "--peak-allocated-gib", str(allocated), "--source", "team-a", *extra]) == 0
    capsys.readouterr()


def test_plain_path_trainplan_db_records_into_that_sqlite_file(ledger, capsys, tmp_path):
    record(capsys, RUNS[:1])
    with sqlite3.connect(ledger) as con:
        rows = con.execute("SELECT model, method, gpu, batch_size, meas_device_bytes FROM runs").fetchall()
    assert rows == [("llama-2-7b", "qlora", "rtx4090", 6, int(22.4 * GIB))]
    assert not spool.pending()                               # nothing spooled: it was written
    runs = run_json(capsys, "runs")
    assert [r["model"] for r in runs] == ["llama-2-7b"]


@pytest.mark.parametrize("how", ["env", "flag"])
def test_bad_url_fails_with_exit_2_and_writes_nothing_anywhere(tmp_path, monkeypatch, capsys, how):
    work, data = tmp_path / "work", Path(os.environ["TRAINPLAN_DATA_DIR"])
    work.mkdir()
    monkeypatch.chdir(work)
    bad = "nosuchdb://ledger.example/runs"
    argv = ["record", *B6, "--device-gib", "22.4", "--source", "team-a"]
    if how == "env":
        monkeypatch.setenv("TRAINPLAN_DB", bad)
    else:
        argv += ["--db", bad]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "nosuchdb" in err
    assert list(work.iterdir()) == [] and (not data.exists() or list(data.rglob("*")) == [])


def test_recorded_run_overrides_does_not_fit_in_estimate_plan_and_fit(ledger, capsys):
    raw = run_json(capsys, "estimate", *B6)["memory"]
    assert raw["fits"] is False and raw["device_bytes"] / GIB == pytest.approx(21.81, abs=0.01)
    assert raw["usable_bytes"] / GIB == pytest.approx(21.38, abs=0.01)
    record(capsys, RUNS[:1])

    est = run_json(capsys, "estimate", *B6)
    mem = est["memory"]
    assert mem["fits"] is True and mem["fits_by"] == "measured run"
    assert mem["measured_run"]["memory_bytes"] == int(22.4 * GIB) and mem["measured_run"]["view"] == "device"
    assert mem["device_bytes"] == raw["device_bytes"]          # the estimate's figures stay
    assert any(n.startswith("measured: this setup ran at 22.4 GiB") and "headroom" in n for n in est["notes"])
    assert est["suggestions"] == []                             # nothing to change: it ran
    assert main(["estimate", *B6]) == 0
    text = capsys.readouterr().out
    assert "DOES NOT FIT" not in text and "FITS" in text and "ran at 22.4 GiB per GPU" in text

    # plan: micro-batch 6 x 1 at a global batch of 6 on one 4090 is the plan recorded as run
    argv = ["plan", *SETUP, "--gpus", "4090", "--global-batch", "6", "--max-gpus", "1"]
    plans = run_json(capsys, *argv)["plans"]
    ran = [p for p in plans if p["sets"]["batch_size"] == 6]
    assert len(ran) == 1 and ran[0]["measured_run"]["run_id"] == "1" and ran[0]["memory"]["fits"] is True
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "ran 22.4/21.4" in text and "recorded in the ledger: this setup ran at 22.4 GiB" in text
    no = run_json(capsys, *argv, "--no-calibration")["plans"]
    assert all(p["sets"]["batch_size"] != 6 for p in no)      # the raw model: 6 x 1 does not fit

    # fit: the largest micro-batch at 4,096 tokens is the one that ran, not the model's 5
    fit = run_json(capsys, "fit", *B6)
    assert fit["max_batch_size"] == 6 and fit["max_batch"]["measured_run"]["run_id"] == "1"
    assert any("fits by a recorded run" in n for n in fit["notes"])
    assert run_json(capsys, "fit", *B6, "--no-calibration")["max_batch_size"] == 5


def test_same_setup_key():
    from trainplan.frozen import replace
    from trainplan.job.options import JobOptions
    from trainplan.job.resolve import resolve_job

    job = resolve_job(JobOptions(model="llama-2-7b", method="qlora", gpu="4090", batch_size=6, seq_len=4096,
                                 grad_ckpt="full"), calibration=None, priced=False)
    s, lay = job.setup, job.layout

    def key(setup=s, layout=lay):
        return recorded.memory_key(setup, layout, zero=job.zero, fsdp=job.fsdp, parallel=job.parallel)

    from trainplan.enums import Attention, GradCkpt, ZeroStage

    assert key(replace(s, grad_accum=4)) == key(replace(s, grad_accum=8))      # memory sees "more than one"
    assert key(replace(s, grad_accum=1)) != key(replace(s, grad_accum=2))
    assert key(replace(s, attention=Attention.FLASH)) == key(replace(s, attention=Attention.SDPA))
    assert key(replace(s, attention=Attention.EAGER)) != key()
    for other in (replace(s, batch_size=5), replace(s, seq_len=2048), replace(s, grad_ckpt=GradCkpt.NONE)):
        assert key(other) != key()
    for layout in (replace(lay, gpu_id="rtx3090"), replace(lay, num_gpus=2), replace(lay, zero=ZeroStage(3))):
        assert key(layout=layout) != key()
    # a recorded setup resolves to the same key as the job of the same flags
    setup = {"model": "llama-2-7b", "method": "qlora", "gpu": "rtx4090", "batch_size": 6, "seq_len": 4096,
             "grad_ckpt": "full", "resolved": {"gpu": "rtx4090"}}
    assert recorded.key_of_setup(setup) == key()


def test_calibrate_then_estimate_plan_and_fit_change_with_a_note(ledger, capsys):
    b5 = SETUP + ["--batch-size", "5"]
    raw_est = run_json(capsys, "estimate", *b5, "--no-calibration")
    plan_argv = ["plan", *SETUP, "--gpus", "4090", "--global-batch", "4", "--max-gpus", "1"]
    raw_plan = run_json(capsys, *plan_argv)
    raw_fit = run_json(capsys, "fit", *b5)
    record(capsys)
    assert main(["calibrate"]) == 0
    report = capsys.readouterr().out
    assert "fitted:" in report and "hf x rtx4090 x qlora" in report
    assert "time_factor 0 of 3" not in report

    est = run_json(capsys, "estimate", *b5)
    assert est["memory"]["device_bytes"] > raw_est["memory"]["device_bytes"]   # alloc_scale 1.04 > 1
    assert any(n.startswith("calibrated from 3 measured runs") for n in est["notes"])
    assert not any(n.startswith("calibrated") for n in raw_est["notes"])

    plan = run_json(capsys, *plan_argv)
    assert any("calibrated (rtx4090, hf, qlora) from 3 measured runs" in n for n in plan["notes"])
    assert plan["plans"][0]["calibrated"] is True and raw_plan["plans"][0]["calibrated"] is False
    top = {p["sets"]["batch_size"]: p for p in plan["plans"]}
    raw_top = {p["sets"]["batch_size"]: p for p in raw_plan["plans"]}
    assert top[4]["memory"]["device_bytes"] > raw_top[4]["memory"]["device_bytes"]
    assert top[4]["memory"]["device_bytes"] == run_json(capsys, "estimate", *SETUP, "--batch-size", "4",
                                                        "--attention", "flash")["memory"]["device_bytes"]

    fit = run_json(capsys, "fit", *b5)
    assert fit["calibrated"] is True and any(n.startswith("calibrated (rtx4090, hf, qlora)") for n in fit["notes"])
    for limit in ("max_batch", "max_seq"):                   # alloc_scale 1.04: more GiB at each limit
        assert fit[limit]["device_bytes"] > raw_fit[limit]["device_bytes"]
    assert main(["fit", *b5]) == 0 and "note: calibrated (rtx4090" in capsys.readouterr().out
    assert run_json(capsys, "fit", *b5, "--no-calibration")["max_seq"] == raw_fit["max_seq"]


def test_calibrate_with_too_few_runs_says_so_and_writes_nothing(ledger, capsys):
    record(capsys, RUNS[:2])
    assert main(["calibrate"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("nothing fitted: no group of the 2 run(s) has 3 runs")
    assert "hf x rtx4090 x qlora" in out and "alloc_scale 2 of 3 run(s), needs 1 more (none: raw)" in out
    data = run_json(capsys, "calibrate")
    assert data["written"] is False and data["path"] is None and data["fitted"] == []
    assert data["coverage"][0]["missing"]["alloc_scale"] == {"runs": 2, "needs": 1, "falls_back_to": None}
    assert cal.load_active() is None
    with_two = run_json(capsys, "calibrate", "--min-runs", "2")
    assert with_two["written"] is True and with_two["coverage"][0]["fitted"]


def test_two_ledgers_keep_two_calibrations(ledger, capsys, tmp_path, monkeypatch):
    record(capsys)
    assert main(["calibrate"]) == 0
    scratch = tmp_path / "scratch.sqlite"
    high = [(f, d + 0.6, r + 0.6, a + 0.6) for f, d, r, a in RUNS]
    record(capsys, high, "--db", str(scratch))
    assert main(["calibrate", "--db", str(scratch)]) == 0
    capsys.readouterr()
    team, other = cal.load_active(), cal.load_active(db=str(scratch))
    assert team is not None and other is not None
    assert team.provenance["db"] == db_url(str(ledger)) and other.provenance["db"] == db_url(str(scratch))
    t_scale = team.term("alloc_scale", "hf", "rtx4090", "qlora")[0].value
    o_scale = other.term("alloc_scale", "hf", "rtx4090", "qlora")[0].value
    assert t_scale == pytest.approx(1.036, abs=0.01) and o_scale > t_scale + 0.02
    files = sorted(p.name for p in (Path(os.environ["TRAINPLAN_DATA_DIR"]) / "calibrations").iterdir())
    assert len(files) == 2 and any(f.startswith("team.sqlite-") for f in files)
    b5 = SETUP + ["--batch-size", "5"]
    mine = run_json(capsys, "estimate", *b5)["memory"]["device_bytes"]
    monkeypatch.setenv("TRAINPLAN_DB", str(scratch))
    assert run_json(capsys, "estimate", *b5)["memory"]["device_bytes"] > mine


def test_legacy_single_calibration_file_is_read_for_its_ledger_and_migrated(ledger, capsys, tmp_path):
    record(capsys)
    data = run_json(capsys, "calibrate")
    keyed = Path(data["path"])
    legacy = Path(os.environ["TRAINPLAN_DATA_DIR"]) / "calibration.json"
    legacy.write_text(keyed.read_text())
    keyed.unlink()
    assert cal.load_active() is not None                          # the old file stands in for its ledger
    assert cal.load_active(db=str(tmp_path / "other.sqlite")) is None   # and for no other
    assert main(["calibrate"]) == 0
    assert keyed.exists() and not legacy.exists()


def test_runs_flush_spool_writes_spooled_runs_and_reports_set_aside_ones(ledger, capsys):
    from trainplan.ledger.records import RunRecord

    record(capsys, RUNS[:1])
    store.dispose_all()
    url = db_url(str(ledger))
    good = RunRecord(source="spooled", setup={"model": "llama-2-7b"}, measured={"step_s": 3.0})
    spool.append(url, [good])
    with open(spool.spool_path(), "a", encoding="utf-8") as f:
        f.write('{"db": "' + url + '", "run": {"source": "x"}}\n')     # never writable: no setup
    out = run_json(capsys, "runs", "--flush-spool")
    assert out["spool"]["written"] == 1 and out["spool"]["still_spooled"] == 0
    assert out["spool"]["set_aside_now"] == 1 and out["spool"]["set_aside_file"].endswith("spool-set-aside.jsonl")
    assert "missing setup" in out["spool"]["set_aside"][0]["reason"]
    assert {r["source"] for r in out["runs"]} == {"team-a", "spooled"}
    store.dispose_all()
    assert main(["runs", "--flush-spool"]) == 0
    text = capsys.readouterr().out
    assert "spool: 0 spooled run(s) written now, 0 still waiting" in text and "set aside, can never be written" in text


def test_estimate_reads_a_recorded_run_without_sqlalchemy(ledger, capsys, tmp_path):
    record(capsys, RUNS[:1])
    store.dispose_all()
    code = ("import sys, io, contextlib, json\n"
            "from trainplan.cli import main\n"
            "buf = io.StringIO()\n"
            "with contextlib.redirect_stdout(buf):\n"
            f"    assert main(['estimate', *{B6!r}, '--json']) == 0\n"
            "assert json.loads(buf.getvalue())['memory']['fits_by'] == 'measured run'\n"
            "bad = [m for m in ('sqlalchemy', 'alembic', 'psycopg') if m in sys.modules]\n"
            "assert not bad, bad\n")
    env = {"PYTHONPATH": SRC, "TRAINPLAN_DATA_DIR": os.environ["TRAINPLAN_DATA_DIR"], "PATH": "/usr/bin:/bin",
           "TRAINPLAN_DB": str(ledger), "TRAINPLAN_CONFIG_DIR": os.environ["TRAINPLAN_CONFIG_DIR"]}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_no_ledger_configured_reads_nothing_and_creates_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv("TRAINPLAN_DB", raising=False)
    assert recorded.recorded_runs() is None
    data = Path(os.environ["TRAINPLAN_DATA_DIR"])
    assert not (data / "ledger.sqlite").exists()
    missing = tmp_path / "nope.sqlite"
    runs = recorded.RecordedRuns(db_url(str(missing)))
    assert runs.runs_of("llama-2-7b") == {} and not missing.exists()
