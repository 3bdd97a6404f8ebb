"""The ledger never loses a measurement and stores no garbage (issue 18, items 4 and 5): only
transient failures spool, spool entries name an absolute database and are flushed one by one (a bad
one is set aside, never blocking the rest), in-memory databases are refused for recording, a
re-import with edited notes updates instead of duplicating, a bad row does not hide the others, and
`record` checks its flags like `estimate` and its measurements against the GPU."""

from __future__ import annotations

import json
import sqlite3
import warnings
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from test_ledger import CASES, cli, count, one_line_error
from trainplan.errors import TrainplanError
from trainplan.ledger import plausibility, spool, store
from trainplan.ledger.capture import save
from trainplan.ledger.paths import db_url
from trainplan.ledger.records import RunRecord, fingerprint_of
from trainplan.specs import GpuSpec
from trainplan.units import GIB

RECORD = ["record", "--model", "llama-2-7b", "--method", "lora", "--gpu", "h100", "--source", "reliability"]


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    monkeypatch.setenv("TRAINPLAN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("TRAINPLAN_DB", raising=False)
    monkeypatch.delenv("TRAINPLAN_CALIBRATION", raising=False)
    yield
    store.dispose_all()


def run(source: str, step_s: float, **extra) -> RunRecord:
    return RunRecord(source=source, setup={"model": "llama-2-7b", "method": "full"}, measured={"step_s": step_s},
                     **extra)


def spool_file(tmp_path: Path) -> Path:
    return tmp_path / "data" / "spool.jsonl"


def stderr_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.strip()]


# --- the spool ------------------------------------------------------------------------------------------------

def test_poisoned_entry_is_set_aside_and_the_runs_behind_it_are_written(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    engine = store.engine_for(url)
    with sqlite3.connect(tmp_path / "ledger.sqlite") as db:       # a database-side refusal (a policy trigger)
        db.execute("CREATE TRIGGER refuse BEFORE INSERT ON runs WHEN NEW.source = 'poison' "
                   "BEGIN SELECT RAISE(ABORT, 'refused by policy'); END")
    store.dispose_all()
    del engine
    # what an outage left behind: a good run, three that can never be written, another good run
    spool.append(url, [run("good", 1.0)])
    bad_date = {"db": url, "run": {**run("bad-date", 2.0).to_json(), "created_at": "31/01/2026"}}
    with spool_file(tmp_path).open("a") as f:
        f.write(json.dumps(bad_date) + "\n")
        f.write('{"db": "sqlite:///torn' + "\n")                  # a line torn by a crash
    spool.append(url, [run("poison", 3.0)])
    spool.append(url, [run("good", 4.0)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")                             # no Python warning on the way
        code, out, err = cli(capsys, "runs", "--db", url, "--json")
    assert code == 0, err
    assert sorted(r["meas_step_s"] for r in json.loads(out)) == [1.0, 4.0]
    lines = stderr_lines(err)
    assert all(ln.startswith("trainplan: ") for ln in lines) and "Warning" not in err
    assert sum("set aside" in ln and "kept in" in ln for ln in lines) == 3
    assert any("2 spooled run(s) written" in ln for ln in lines)
    assert spool.pending(url) == []
    reasons = [e["reason"] for e in spool.set_aside()]
    assert any("created_at '31/01/2026'" in r for r in reasons)
    assert any("refused by policy" in r for r in reasons)
    assert any("torn line" in r for r in reasons)
    # a second look writes nothing twice and reports what is set aside
    code, out, err = cli(capsys, "runs", "--db", url)
    assert code == 0 and "set aside: 2 spooled run(s) of this database, 1 of others" in out
    assert count(url) == 2


def test_flush_stops_at_a_transient_failure_and_keeps_the_rest(tmp_path):
    url = f"sqlite:///{tmp_path / 'x.sqlite'}"
    spool.append(url, [run("a", 1.0), run("b", 2.0), run("c", 3.0)])
    spool.append("sqlite:////elsewhere/other.sqlite", [run("other", 1.0)])
    seen = []

    def write(record):
        seen.append(record.source)
        if record.source == "b":
            raise store.LedgerUnavailable("cannot reach the ledger database: database is locked")

    result = spool.flush(url, write, transient=store.LedgerUnavailable)
    assert seen == ["a", "b"] and result.written == 1 and result.kept == 2 and result.set_aside == ()
    assert [e["run"]["source"] for e in spool.pending(url)] == ["b", "c"]
    assert [e["run"]["source"] for e in spool.pending()] == ["b", "c", "other"]      # order kept


def test_relative_path_spooled_in_a_flushes_into_a_from_b(capsys, tmp_path, monkeypatch):
    a, b = tmp_path / "A", tmp_path / "B"
    a.mkdir()
    b.mkdir()
    monkeypatch.chdir(a)
    code, _, err = cli(capsys, *RECORD, "--step-s", "1.5", "--db", "sqlite:///sub/ledger.sqlite")
    assert code == 0 and "spooled" in err and len(stderr_lines(err)) == 1
    code, _, err = cli(capsys, *RECORD, "--step-s", "2.5", "--db", "sub/ledger.sqlite")     # a plain path too
    assert code == 0 and "spooled" in err
    assert {e["db"] for e in spool.pending()} == {f"sqlite:///{a / 'sub' / 'ledger.sqlite'}"}
    (a / "sub").mkdir()
    (b / "sub").mkdir()
    monkeypatch.chdir(b)
    code, out, err = cli(capsys, "runs", "--db", "sqlite:///sub/ledger.sqlite", "--json")    # B's own database
    assert code == 0 and json.loads(out) == [] and len(spool.pending()) == 2
    code, out, err = cli(capsys, "runs", "--db", str(a / "sub" / "ledger.sqlite"), "--json")
    assert code == 0, err
    assert sorted(r["meas_step_s"] for r in json.loads(out)) == [1.5, 2.5]
    assert spool.pending() == [] and count(f"sqlite:///{b / 'sub' / 'ledger.sqlite'}") == 0


def test_relative_sqlite_urls_are_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert db_url("sqlite:///x/l.sqlite?timeout=5") == f"sqlite:///{tmp_path / 'x' / 'l.sqlite'}?timeout=5"
    assert db_url("l.sqlite") == f"sqlite:///{tmp_path / 'l.sqlite'}"
    assert db_url("sqlite:////abs/l.sqlite") == "sqlite:////abs/l.sqlite"
    assert db_url("postgres://u:p@h/d") == "postgresql+psycopg://u:p@h/d"


def test_legacy_relative_spool_entry_is_set_aside(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    spool_file(tmp_path).parent.mkdir(parents=True)
    with spool_file(tmp_path).open("w") as f:
        f.write(json.dumps({"db": "sqlite:///ledger.sqlite", "run": run("old", 1.0).to_json()}) + "\n")
    code, out, err = cli(capsys, "runs", "--db", url, "--json")
    assert code == 0 and json.loads(out) == []
    assert "relative SQLite URL 'sqlite:///ledger.sqlite'" in err and spool.pending() == []
    assert [e["run"]["source"] for e in spool.set_aside()] == ["old"]


# --- permanent failures: exit 2, nothing written, nothing spooled ---------------------------------------------

def _future_schema(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'future.sqlite'}"
    store.engine_for(url)
    store.dispose_all()
    with sqlite3.connect(tmp_path / "future.sqlite") as db:
        db.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    return url


def _not_a_database(tmp_path: Path) -> str:
    (tmp_path / "notes.txt").write_text("not a database\n" * 100)
    return str(tmp_path / "notes.txt")


@pytest.mark.parametrize("make, words", [
    (_not_a_database, "not a database"),
    (lambda tmp_path: "nosuchdialect://host/db", "not usable"),
    (_future_schema, "schema"),
], ids=["not-sqlite", "bad-url", "schema-mismatch"])
def test_permanent_failure_is_exit_2_nothing_written_nothing_spooled(capsys, tmp_path, make, words):
    url = make(tmp_path)
    before = Path(url).read_bytes() if Path(url).exists() else None
    code, _, err = cli(capsys, *RECORD, "--step-s", "1.0", "--db", url)
    one_line_error(code, err)
    assert words in err and "spooled" not in err
    assert not spool_file(tmp_path).exists() or spool.pending() == []
    if before is not None:
        assert Path(url).read_bytes() == before


def test_refused_row_and_bad_created_at_write_nothing(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    store.engine_for(url)
    with sqlite3.connect(tmp_path / "l.sqlite") as db:
        db.execute("CREATE TRIGGER refuse BEFORE INSERT ON runs WHEN NEW.source = 'team-b' "
                   "BEGIN SELECT RAISE(ABORT, 'team-b writes elsewhere'); END")
    runs = [{"setup": {"model": "llama-2-7b", "gpu": "h100"}, "measured": {"step_s": 1.0}, "source": "team-a"},
            {"setup": {"model": "llama-2-7b", "gpu": "h100"}, "measured": {"step_s": 2.0}, "source": "team-b"}]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs))
    code, _, err = cli(capsys, "record", "--file", str(path), "--db", url)
    one_line_error(code, err)
    assert "refused the write" in err and "team-b writes elsewhere" in err
    path.write_text(json.dumps([{**runs[0], "created_at": "yesterday"}]))
    code, _, err = cli(capsys, "record", "--file", str(path), "--db", url)
    one_line_error(code, err)
    assert "created_at 'yesterday' is not an ISO 8601 date-time" in err
    assert count(url) == 0 and spool.pending() == []


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///:memory:", "sqlite:///file:x?mode=memory&uri=true"])
def test_in_memory_database_is_refused_for_recording(capsys, tmp_path, url):
    code, _, err = cli(capsys, *RECORD, "--step-s", "1.0", "--db", url)
    one_line_error(code, err)
    assert "lives in memory" in err
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(CASES))
    code, _, err = cli(capsys, "import", str(path), "--db", url)
    one_line_error(code, err)
    with pytest.raises(TrainplanError, match="in memory"):
        save([run("api", 1.0)], url, spool_on_failure=True)
    assert spool.pending() == []


def test_track_keeps_a_refused_run_in_the_set_aside_file(tmp_path):
    import trainplan.ledger.track
    from test_ledger import Clock, FakeStats, _train

    bad = _not_a_database(tmp_path)
    clock = Clock()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with trainplan.ledger.track(model="llama-2-7b", gpu="a100", stats=FakeStats(), clock=clock, db=bad) as r:
            _train(r, clock, steps=3)
    assert any("kept in" in str(w.message) and "not a database" in str(w.message) for w in caught)
    (kept,) = spool.set_aside()
    assert kept["run"]["measured"]["peak_allocated_bytes"] == 10 * 2**30 and "not a database" in kept["reason"]
    assert spool.pending() == []


# --- re-import identity and unreadable rows -------------------------------------------------------------------

def test_reimport_after_editing_notes_updates_instead_of_duplicating(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(CASES))
    code, out, err = cli(capsys, "import", str(path), "--db", url, "--json")
    assert code == 0 and json.loads(out)["added"] == 3, err
    edited = [dict(c) for c in CASES]
    edited[0]["notes"] = "re-checked against the log"
    edited[1]["source"] = {**edited[1]["source"], "quote": "3150.8 tokens/s", "where": "README table 2"}
    edited[2]["confidence"] = "medium"
    path.write_text(json.dumps(edited))
    code, out, err = cli(capsys, "import", str(path), "--db", url, "--json")
    assert code == 0, err
    assert json.loads(out)["added"] == 0 and json.loads(out)["updated"] == 3
    assert count(url) == 3
    rows = {r["external_id"]: r for r in store.query_runs(store.engine_for(url))}
    assert rows[CASES[0]["id"]]["raw"]["notes"] == "re-checked against the log"
    edited[0]["measured"] = {**edited[0]["measured"], "peak_mem_gib": 21.0}     # another measurement: another run
    path.write_text(json.dumps(edited))
    code, out, _ = cli(capsys, "import", str(path), "--db", url, "--json")
    assert json.loads(out)["added"] == 1 and count(url) == 4


def test_recorded_notes_edit_updates_the_run(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    for notes in ("first", "second"):
        code, out, err = cli(capsys, *RECORD, "--step-s", "1.0", "--notes", notes, "--db", url, "--json")
        assert code == 0, err
    assert json.loads(out) == {"added": 0, "already_present": 1, "updated": 1, "spooled": 0, "spool": None}
    (row,) = store.query_runs(store.engine_for(url))
    assert row["notes"] == "second"


def test_migration_gives_stored_cases_the_new_identity(capsys, tmp_path):
    from alembic import command
    from alembic.config import Config

    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    from sqlalchemy import create_engine

    engine = create_engine(url)
    cfg = Config()
    cfg.set_main_option("script_location", str(store.MIGRATIONS))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0001_runs")
    path = tmp_path / "cases.json"
    path.write_text(json.dumps(CASES[:1]))
    from trainplan.ledger.capture import record_from_case

    rec = record_from_case(CASES[0])
    row = store._row(rec)
    row["fingerprint"] = "0" * 64                               # what the old identity gave it
    with engine.begin() as conn:
        store._insert(conn, row)
    engine.dispose()
    new_engine = store.engine_for(url)
    assert store.current_revision(new_engine) == store.HEAD == "0002_case_identity"
    (stored,) = store.query_runs(new_engine)
    assert stored["fingerprint"] == rec.fingerprint
    code, out, err = cli(capsys, "import", str(path), "--db", url, "--json")
    assert code == 0 and json.loads(out)["added"] == 0, err


def test_bad_rows_are_reported_and_the_others_listed(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    store.add_runs(store.engine_for(url), [run("r", 1.0), run("r", 2.0), run("r", 3.0)])
    with sqlite3.connect(tmp_path / "l.sqlite") as db:
        db.execute("UPDATE runs SET created_at = 'not a date' WHERE meas_step_s = 1.0")
        db.execute("UPDATE runs SET meas_step_s = 'fast' WHERE meas_step_s = 3.0")
    ids = dict(sqlite3.connect(tmp_path / "l.sqlite").execute("SELECT id, meas_step_s FROM runs"))
    code, out, err = cli(capsys, "runs", "--db", url, "--json")
    assert code == 0, err
    listed = json.loads(out)
    assert [r["meas_step_s"] for r in listed if "unreadable" not in r] == [2.0]
    unreadable = {r["id"]: r["unreadable"] for r in listed if "unreadable" in r}
    assert set(unreadable) == {i for i, s in ids.items() if s != 2.0}
    assert any("created_at 'not a date'" in v for v in unreadable.values())
    assert any("meas_step_s 'fast' is not a finite number" in v for v in unreadable.values())
    code, out, _ = cli(capsys, "runs", "--db", url)
    assert code == 0 and out.count("unreadable: run id") == 2


# --- record: the same checks as estimate, plausible measurements ----------------------------------------------

@pytest.mark.parametrize("flags, words", [
    (("--efficiency", "-1", "--step-s", "1"), "--efficiency"),
    (("--headroom", "nan", "--step-s", "1"), "--headroom"),
    (("--price-per-gpu-hour", "-5", "--step-s", "1"), "--price-per-gpu-hour"),
    (("--efficiency", "-1", "--headroom", "nan", "--price-per-gpu-hour", "-5", "--step-s", "1"), "error"),
    (("--peak-allocated-gib", "1e-30"), "below one byte"),
    (("--peak-allocated-gib", "nan"), "finite positive"),
    (("--step-s", "inf"), "finite positive"),
    (("--tokens-per-s", "-5"), "finite positive"),
    (("--peak-allocated-gib", "81"), "above the capacity of the 'h100-sxm' GPU (79.65 GiB)"),
    (("--device-gib", "81"), "capacity"),
    (("--peak-reserved-gib", "30", "--device-gib", "20"),
     "device memory (20.00 GiB, nvidia-smi/NVML) is below peak reserved"),
    (("--peak-allocated-gib", "30", "--device-gib", "20"), "below peak allocated"),
    (("--peak-allocated-gib", "30", "--peak-reserved-gib", "20"), "below peak allocated"),
    (("--tokens-per-s", "1e8"), "above the 'h100-sxm' GPU's dense bf16 peak of 989 TFLOP/s"),
], ids=lambda v: "_".join(v) if isinstance(v, tuple) else None)
def test_record_refuses_garbage_with_one_line(capsys, tmp_path, flags, words):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    code, _, err = cli(capsys, *RECORD, *flags, "--db", url)
    one_line_error(code, err)
    assert words in err
    assert count(url) == 0 and spool.pending() == []


def test_forced_capacity_overrun_is_recorded_with_a_note(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    code, _, err = cli(capsys, *RECORD, "--peak-allocated-gib", "81", "--force", "--db", url)
    assert code == 0, err
    (row,) = store.query_runs(store.engine_for(url))
    assert row["meas_peak_allocated_bytes"] == 81 * GIB and "recorded with --force" in row["notes"]
    code, _, err = cli(capsys, *RECORD, "--tokens-per-s", "1e8", "--force", "--db", url)
    one_line_error(code, err)                                    # --force is for capacity only


def test_tokens_per_s_limit_follows_the_estimates_flops_per_token(capsys, tmp_path):
    """The limit is the GPU's dense peak / the estimate's model FLOPs per token: just below records,
    just above is refused (7B LoRA on an H100 in bf16)."""
    from trainplan.job.options import JobOptions
    from trainplan.ledger.capture import estimate_for

    est = estimate_for(JobOptions(model="llama-2-7b", method="lora", gpu="h100"))
    t = est.time
    limit = t.step.efficiency.peak_flops_per_s / (t.flops_per_step / t.tokens_per_step)
    assert 15_000 < limit < 40_000                                  # ~989 TFLOP/s / ~43 GFLOP per token
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    code, _, err = cli(capsys, *RECORD, "--tokens-per-s", f"{limit * 0.99:.0f}", "--db", url)
    assert code == 0, err
    code, _, err = cli(capsys, *RECORD, "--tokens-per-s", f"{limit * 1.01:.0f}", "--db", url)
    one_line_error(code, err)
    assert count(url) == 1


def test_record_stores_the_estimate_that_estimate_prints(capsys, tmp_path):
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    flags = ["--model", "llama-2-7b", "--method", "lora", "--gpu", "h100", "--batch-size", "2", "--seq-len", "2048"]
    code, out, err = cli(capsys, "estimate", *flags, "--no-calibration", "--json")
    assert code == 0, err
    est = json.loads(out)
    code, _, err = cli(capsys, "record", *flags, "--step-s", "1.0", "--db", url)
    assert code == 0, err
    (row,) = store.query_runs(store.engine_for(url))
    assert row["est_device_bytes"] == est["memory"]["device_bytes"]
    assert row["est_peak_allocated_bytes"] == est["memory"]["peak_allocated_bytes"]
    assert row["estimate"]["step_s"] == pytest.approx(est["time"]["step_s"])
    assert row["estimate"]["mfu"] == pytest.approx(est["time"]["mfu"]) and 0 < row["estimate"]["mfu"] < 1


# --- properties ------------------------------------------------------------------------------------------------

H100 = GpuSpec(id="fake-h100", name="fake", vendor="nvidia", memory_bytes=80 * 10**9, reported_memory_bytes=None,
               memory_bw_bytes_per_s=3.35e12, peak_flops_per_s={"bf16": 989e12})


@settings(max_examples=200, deadline=None)
@given(tps=st.floats(1e-3, 1e9), fpt=st.floats(1e6, 1e12))
def test_throughput_refused_exactly_above_the_peak(tps, fpt):
    implied = tps * fpt
    try:
        plausibility.check_throughput({"tokens_per_s_per_gpu": tps}, H100, flops_per_token=fpt,
                                      peak_flops_per_s=989e12, peak_dtype="bf16")
        refused = False
    except TrainplanError as exc:
        refused = True
        assert "\n" not in str(exc) and "'fake-h100'" in str(exc)
    assert refused == (implied > 989e12)


@settings(max_examples=200, deadline=None)
@given(gib=st.floats(0.001, 200.0), force=st.booleans())
def test_capacity_refused_unless_forced(gib, force):
    measured = {"peak_allocated_bytes": int(gib * GIB)}
    above = measured["peak_allocated_bytes"] > 80 * 10**9
    try:
        notes = plausibility.check_memory(measured, H100, force=force)
    except TrainplanError:
        assert above and not force
        return
    assert bool(notes) == above


text = st.text(max_size=40)


@settings(max_examples=200, deadline=None)
@given(notes=text, quote=text, where=text, seq_note=text, confidence=st.sampled_from(["high", "medium", "low"]),
       value=st.floats(0.5, 80.0))
def test_case_identity_ignores_free_text_only(notes, quote, where, seq_note, confidence, value):
    base = {**CASES[0], "measured": {**CASES[0]["measured"], "peak_mem_gib": value}}
    edited = {**base, "notes": notes, "seq_len_note": seq_note, "confidence": confidence,
              "source": {**base["source"], "quote": quote, "where": where}}

    def key(raw):
        return fingerprint_of(source="s", external_id=raw["id"], setup=None, environment=None, measured=None, raw=raw)

    assert key(edited) == key(base)
    assert key({**base, "measured": {**base["measured"], "peak_mem_gib": value + 1.0}}) != key(base)


# --- PostgreSQL: which failures spool (TRAINPLAN_TEST_PG_URL, as test_ledger_postgres.py) ----------------------

PG_URL = __import__("os").environ.get("TRAINPLAN_TEST_PG_URL")
needs_pg = pytest.mark.skipif(not PG_URL, reason="TRAINPLAN_TEST_PG_URL not set (no PostgreSQL server)")


def test_unreachable_server_spools_with_the_password_hidden(capsys):
    url = "postgresql://team:secret@127.0.0.1:1/ledger"
    code, _, err = cli(capsys, *RECORD, "--step-s", "1.0", "--db", url)
    assert code == 0 and "spooled" in err and len(stderr_lines(err)) == 1 and "secret" not in err
    (entry,) = spool.pending(db_url(url))
    assert entry["db"] == "postgresql+psycopg://team:***@127.0.0.1:1/ledger"


@needs_pg
def test_missing_postgres_database_is_exit_2_and_not_spooled(capsys):
    from sqlalchemy.engine import make_url

    url = make_url(db_url(PG_URL)).set(database="trainplan_no_such_db").render_as_string(hide_password=False)
    code, _, err = cli(capsys, *RECORD, "--step-s", "1.0", "--db", url)
    one_line_error(code, err)
    assert "does not exist" in err and spool.pending() == []


@pytest.mark.parametrize("argv, words", [
    (["accuracy", "--cases", "{cases}", "--min-runs", "0"], "--min-runs must be at least 1, got 0"),
    (["calibrate", "--min-runs", "1"], "--min-runs must be at least 2"),
    (["runs", "--limit", "-1"], "--limit must be 0 (all runs) to 4611686018427387904, got -1"),
], ids=["accuracy-min-runs-0", "calibrate-min-runs-1", "runs-negative-limit"])
def test_ledger_command_counts_are_checked(capsys, tmp_path, argv, words):
    cases = tmp_path / "cases.json"
    cases.write_text(json.dumps(CASES))
    code, _, err = cli(capsys, *[a.format(cases=cases) for a in argv])
    one_line_error(code, err)
    assert words in err


def test_implausible_numbers_from_trainplans_own_instruments_are_kept_with_a_note():
    """A probe or track measurement (device below reserved: NVML read at another moment on a shared
    GPU) is recorded with the check's words as a note; the same numbers typed by a person are refused."""
    from trainplan.job.options import JobOptions
    from trainplan.ledger.capture import record_from_options

    options = JobOptions(model="llama-2-7b", method="lora", gpu="h100")
    measured = {"peak_allocated_bytes": 20 * 2**30, "peak_reserved_bytes": 22 * 2**30, "device_bytes": 21 * 2**30}
    with pytest.raises(TrainplanError, match="device memory .* is below peak reserved"):
        record_from_options(options, measured, source="person")
    rec = record_from_options(options, measured, source="probe", measured_here=True)
    assert rec.measured["device_bytes"] == 21 * 2**30
    assert "implausible as measured: device memory (21.00 GiB" in rec.notes
