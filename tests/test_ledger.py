"""The ledger on SQLite: migrations, record/import/runs, duplicates, bad input, concurrency, a
writer killed mid-transaction, the spool. `LedgerContract` runs again on PostgreSQL in
test_ledger_postgres.py."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import alembic  # noqa: F401  (the dev extra installs it: missing, the tests fail)
import pytest
import sqlalchemy  # noqa: F401  (the dev extra installs it: missing, the tests fail)

from trainplan.cli import main  # noqa: E402
from trainplan.ledger import spool, store  # noqa: E402
from trainplan.ledger.capture import save  # noqa: E402
from trainplan.ledger.records import RunRecord  # noqa: E402

SRC = str(Path(__file__).resolve().parents[1] / "src")

# Three cases of shared/ground_truth/published_dev.json (trimmed to the fields the mapping reads).
CASES = [
    {"id": "litgpt-restable-lora1gpu-llama2-7b-None-mbs1", "kind": "memory",
     "model": {"name": "Llama-2-7b-hf", "hf_id": "meta-llama/Llama-2-7b-hf", "layers": 32, "hidden": 4096,
               "heads": 32, "kv_heads": 32, "intermediate": 11008, "vocab": 32000},
     "method": "lora", "lora": {"rank": 8, "alpha": 16, "targets": ["query", "value"]}, "quantization": None,
     "precision": {"weights": "bf16", "compute": "bf16"}, "optimizer": "torch.optim.AdamW", "micro_batch": 1,
     "grad_accum": 128, "seq_len": 1304, "grad_ckpt": False, "attention": "torch SDPA",
     "gpus": {"type": "A100-SXM4-40GB", "count": 1}, "parallel": {},
     "framework": "lit-gpt commit 8641822, PyTorch 2.1.0, --precision bf16-true",
     "measured": {"peak_mem_gib": 19.837, "what": "torch.cuda.max_memory_allocated()/1e9"},
     "source": {"repo": "Lightning-AI/litgpt"}, "confidence": "high"},
    {"id": "qwen1-readme-7b-lora-len2048-time", "kind": "time",
     "model": {"name": "Qwen-7B(-Chat)", "hf_id": "Qwen/Qwen-7B-Chat"}, "method": "lora",
     "lora": {"rank": 64, "alpha": 16, "targets": ["c_attn", "c_proj", "w1", "w2"]}, "quantization": None,
     "precision": {"weights": "bf16", "compute": "bf16"}, "optimizer": "adamw_torch (finetune.py default)",
     "micro_batch": 1, "grad_accum": 8, "seq_len": 2048, "grad_ckpt": True, "attention": "flash-attention 2",
     "gpus": {"type": "A100-SXM4-80G", "count": 1}, "parallel": {},
     "framework": "Qwen finetune.py (HF Trainer + PEFT; DeepSpeed where noted)",
     "measured": {"step_time_s": 5.2, "tokens_per_s_per_gpu": 3150.8},
     "source": {"repo": "QwenLM/Qwen"}, "confidence": "medium"},
    {"id": "peft-readme-T0_3B-lora", "kind": "memory",
     "model": {"name": "T0_3B", "hf_id": "bigscience/T0_3B"}, "method": "lora",
     "lora": {"rank": 8, "alpha": 32}, "micro_batch": 8, "seq_len": 64, "gpus": {"type": "A100-80GB", "count": 1},
     "framework": "HF PEFT (Dec 2022), accelerate", "measured": {"peak_mem_gib": 14.4, "what": "not stated"},
     "source": {"repo": "huggingface/peft"}, "confidence": "low"},
]

RECORD = ["record", "--model", "llama-2-7b", "--method", "lora", "--batch-size", "2", "--seq-len", "1024",
          "--gpu", "a100-80gb", "--source", "unit-test"]

WRITER = textwrap.dedent("""
    import sys
    from trainplan.ledger.records import RunRecord
    from trainplan.ledger.store import add_runs, engine_for
    url, worker, n, shared = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    engine = engine_for(url)
    def run(key, i):
        return RunRecord(source="concurrency", setup={"model": "llama-2-7b", "method": "full"},
                         measured={"step_s": 1.0 + i}, external_id=key)
    for i in range(n):
        add_runs(engine, [run(f"w{worker}-{i}", i)])
        if i < shared:
            add_runs(engine, [run(f"shared-{i}", i)])
""")

KILLED = textwrap.dedent("""
    import sys, time
    from trainplan.ledger.records import RunRecord
    from trainplan.ledger.store import _insert, _row, engine_for
    engine = engine_for(sys.argv[1])
    conn = engine.connect()
    conn.begin()
    for i in range(50):
        _insert(conn, _row(RunRecord(source="killed", setup={"model": "m"}, measured={"step_s": 1.0 + i},
                                     external_id=f"k{i}")))
    print("READY", flush=True)
    time.sleep(120)
""")


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code: int, err: str) -> None:
    assert code == 2, err
    lines = [ln for ln in err.strip().splitlines() if ln]
    assert len(lines) == 1 and lines[0].startswith("trainplan: error:"), err
    assert "Traceback" not in err


def count(url: str) -> int:
    return store.count_runs(store.engine_for(url))


def python_env(tmp_path: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    env["TRAINPLAN_DATA_DIR"] = str(tmp_path / "data")
    return env


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Every test gets its own data directory (default database, spool, calibration file)."""
    monkeypatch.setenv("TRAINPLAN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("TRAINPLAN_DB", raising=False)
    monkeypatch.delenv("TRAINPLAN_CALIBRATION", raising=False)
    yield
    store.dispose_all()


class LedgerContract:
    """Behaviour every backend must show; subclasses provide the `url` fixture."""

    def test_migrated_on_first_use(self, url):
        engine = store.engine_for(url)
        assert store.current_revision(engine) == store.HEAD
        store.migrate(engine)                      # a second upgrade is a no-op
        assert store.count_runs(engine) == 0

    def test_record_stores_setup_measurement_and_estimate(self, capsys, url):
        code, out, err = cli(capsys, *RECORD, "--peak-allocated-gib", "20.5", "--peak-reserved-gib", "22",
                             "--device-gib", "23.1", "--step-s", "1.25", "--tokens-per-s", "1638", "--db", url,
                             "--env", "driver=550.54")
        assert code == 0, err
        code, out, err = cli(capsys, "runs", "--db", url, "--json")
        assert code == 0, err
        (run,) = json.loads(out)
        assert run["model"] == "llama-2-7b" and run["method"] == "lora" and run["gpu"] == "a100-sxm4-80gb"
        assert run["framework"] == "hf" and run["precision"] == "bf16" and run["source"] == "unit-test"
        assert run["meas_peak_allocated_bytes"] == int(20.5 * 2**30)
        assert run["est_device_bytes"] > 0 and run["estimate"]["step_s"] > 0
        assert run["residual"]["device_bytes"] == pytest.approx(run["est_device_bytes"] / run["meas_device_bytes"] - 1)
        assert run["environment"]["driver"] == "550.54" and run["setup"]["seq_len"] == 1024
        # the same run again adds nothing
        code, out, _ = cli(capsys, *RECORD, "--peak-allocated-gib", "20.5", "--peak-reserved-gib", "22",
                           "--device-gib", "23.1", "--step-s", "1.25", "--tokens-per-s", "1638", "--db", url,
                           "--env", "driver=550.54")
        assert code == 0 and "already" in out
        assert count(url) == 1

    def test_record_file_of_runs(self, capsys, url, tmp_path):
        runs = [{"setup": {"model": "llama-3.1-8b", "method": "qlora", "gpu": "4090"},
                 "measured": {"peak_allocated_gib": 9.5, "step_s": 2.0}, "source": "team-a"},
                {"setup": {"model": "qwen2.5-7b", "method": "full", "num_gpus": 8, "zero": 3, "gpu": "h100"},
                 "measured": {"device_gib": 61.0}}]
        path = tmp_path / "runs.json"
        path.write_text(json.dumps(runs))
        code, out, err = cli(capsys, "record", "--file", str(path), "--db", url, "--json")
        assert code == 0, err
        assert json.loads(out)["added"] == 2
        code, out, _ = cli(capsys, "runs", "--db", url, "--source", "team", "--json")
        assert [r["model"] for r in json.loads(out)] == ["llama-3.1-8b"]

    def test_import_twice_adds_nothing(self, capsys, url, tmp_path):
        path = tmp_path / "cases.json"
        path.write_text(json.dumps(CASES))
        code, out, err = cli(capsys, "import", str(path), "--db", url, "--json")
        assert code == 0, err
        first = json.loads(out)
        assert first["added"] == 3 and first["not_estimated"] == ["peft-readme-T0_3B-lora"]
        code, out, _ = cli(capsys, "import", str(path), "--db", url, "--json")
        assert json.loads(out) == {**first, "added": 0, "already_present": 3}
        assert count(url) == 3
        code, out, _ = cli(capsys, "runs", "--db", url, "--framework", "litgpt", "--json")
        (run,) = json.loads(out)
        assert run["raw"]["id"] == CASES[0]["id"] and run["est_peak_allocated_bytes"] > 0

    def test_import_unknown_field_writes_nothing(self, capsys, url, tmp_path):
        path = tmp_path / "cases.json"
        path.write_text(json.dumps(CASES[:1] + [{**CASES[1], "throughput_note": "x"}]))
        code, _, err = cli(capsys, "import", str(path), "--db", url)
        one_line_error(code, err)
        assert "throughput_note" in err
        assert count(url) == 0

    @pytest.mark.parametrize("flags, words", [
        (("--peak-allocated-gib", "-3"), "positive"),
        (("--device-gib", "20000"), "10 TiB"),
        (("--step-s", "0"), "positive"),
        (("--tokens-per-s", "1e12"), "absurd"),
        (("--peak-allocated-gib", "30", "--peak-reserved-gib", "20"), "below peak allocated"),
        ((), "no measurement"),
    ])
    def test_bad_measurements_write_nothing(self, capsys, url, flags, words):
        code, _, err = cli(capsys, *RECORD, *flags, "--db", url)
        one_line_error(code, err)
        assert words in err
        assert count(url) == 0

    def test_runs_csv(self, capsys, url, tmp_path):
        cli(capsys, *RECORD, "--peak-allocated-gib", "20", "--step-s", "1.5", "--db", url)
        out_csv = tmp_path / "runs.csv"
        code, out, err = cli(capsys, "runs", "--db", url, "--csv", str(out_csv))
        assert code == 0, err and "llama-2-7b" in out
        import csv

        (row,) = list(csv.DictReader(out_csv.open()))
        assert row["model"] == "llama-2-7b" and float(row["residual_peak_allocated_bytes"]) > -1

    def test_concurrent_writers_lose_and_duplicate_nothing(self, url, tmp_path):
        n, shared, workers = 200, 25, 8
        procs = [subprocess.Popen([sys.executable, "-c", WRITER, url, str(w), str(n), str(shared)],
                                  env=python_env(tmp_path), stderr=subprocess.PIPE, text=True)
                 for w in range(workers)]
        errors = [p.communicate(timeout=300)[1] for p in procs]
        assert all(p.returncode == 0 for p in procs), errors
        rows = store.query_runs(store.engine_for(url))
        assert len(rows) == workers * n + shared
        keys = [r["external_id"] for r in rows]
        assert len(set(keys)) == len(keys)
        assert len({r["fingerprint"] for r in rows}) == len(rows)

    def test_writer_killed_mid_transaction_leaves_it_consistent(self, url, tmp_path):
        store.engine_for(url)                       # migrated before the writer starts
        proc = subprocess.Popen([sys.executable, "-c", KILLED, url], env=python_env(tmp_path),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "READY", proc.stderr.read()
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        store.dispose_all()
        engine = store.engine_for(url)
        assert store.count_runs(engine) == 0          # the open transaction left nothing
        added, _ = store.add_runs(engine, [RunRecord(source="after", setup={"model": "m"}, measured={"step_s": 2.0})])
        assert added == 1 and store.count_runs(engine) == 1


class TestSqlite(LedgerContract):
    @pytest.fixture
    def url(self, tmp_path):
        return f"sqlite:///{tmp_path / 'ledger.sqlite'}"

    def test_default_database_lives_in_the_data_dir(self, capsys, tmp_path):
        code, _, err = cli(capsys, *RECORD, "--step-s", "1.0")
        assert code == 0, err
        assert (tmp_path / "data" / "ledger.sqlite").exists()

    def test_killed_writer_leaves_an_intact_file(self, url, tmp_path):
        self.test_writer_killed_mid_transaction_leaves_it_consistent(url, tmp_path)
        path = url.split("///", 1)[1]
        assert sqlite3.connect(path).execute("PRAGMA integrity_check").fetchone()[0] == "ok"

    def test_first_use_waits_for_a_writer_holding_the_rollback_journal(self, url, tmp_path):
        # A new file is still in rollback-journal mode; a writer holds its reserved lock for 0.3 s.
        # PRAGMA journal_mode=WAL answers "database is locked" at once there (SQLite skips the busy
        # handler, which could deadlock), as eight first uses at once met in CI; the store waits.
        import threading
        import time

        holder = sqlite3.connect(url.split("///", 1)[1], isolation_level=None, check_same_thread=False)
        holder.execute("CREATE TABLE other (x)")
        holder.execute("BEGIN IMMEDIATE")
        holder.execute("INSERT INTO other VALUES (1)")
        release = threading.Timer(0.3, lambda: holder.execute("COMMIT"))
        start_s = time.monotonic()
        release.start()
        try:
            engine = store.engine_for(url)
        finally:
            release.join()
        assert time.monotonic() - start_s >= 0.3
        assert store.count_runs(engine) == 0
        holder.close()
        assert sqlite3.connect(url.split("///", 1)[1]).execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    def test_unreachable_database_for_runs_is_one_line(self, capsys, tmp_path):
        code, _, err = cli(capsys, "runs", "--db", f"sqlite:///{tmp_path}/no/such/dir/ledger.sqlite")
        one_line_error(code, err)
        assert "cannot reach the ledger database" in err

    def test_bad_url_is_one_line(self, capsys):
        code, _, err = cli(capsys, "runs", "--db", "nosuchdialect://x")
        one_line_error(code, err)

    def test_unreachable_database_spools_and_flushes_later(self, capsys, tmp_path):
        target = tmp_path / "later" / "ledger.sqlite"
        url = f"sqlite:///{target}"
        code, _, err = cli(capsys, *RECORD, "--step-s", "1.0", "--db", url)
        assert code == 0 and "spooled" in err and err.count("\n") == 1     # one line, no Python warning
        assert len(spool.pending(url)) == 1
        target.parent.mkdir()                        # the database becomes reachable
        code, out, err = cli(capsys, "runs", "--db", url, "--json")
        assert code == 0, err
        assert len(json.loads(out)) == 1 and spool.pending(url) == []

    def test_save_without_spool_raises_one_line(self, tmp_path):
        from trainplan.errors import TrainplanError

        rec = RunRecord(source="s", setup={"model": "m"}, measured={"step_s": 1.0})
        with pytest.raises(TrainplanError, match="cannot reach"):
            save([rec], f"sqlite:///{tmp_path}/missing/x.sqlite")


# --- trainplan.ledger.track: the context manager and the callbacks (a fake device, no GPU needed) -------------

class FakeStats:
    """Stands in for torch.cuda + NVML: fixed peaks, a device reading per sample."""

    def __init__(self, alloc_gib=10.0, reserved_gib=11.0, device_gib=12.0):
        self.alloc, self.reserved, self.device = alloc_gib * 2**30, reserved_gib * 2**30, device_gib * 2**30
        self.resets = 0

    def reset_peak(self):
        self.resets += 1

    def peak_allocated(self):
        return int(self.alloc)

    def peak_reserved(self):
        return int(self.reserved)

    def device_used(self):
        return int(self.device)

    def environment(self):
        return {"gpu_name": "Fake A100", "gpu_count": 1, "driver": "550.54", "cuda": "12.4"}


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def _train(run, clock, steps=5, first=8.0, each=1.5, tokens=4096):
    for i in range(steps):
        clock.t += first if i == 0 else each
        run.step(tokens=tokens)


def test_track_records_peaks_step_time_and_estimate(tmp_path):
    import trainplan.ledger.track

    url, clock, stats = f"sqlite:///{tmp_path / 't.sqlite'}", Clock(), FakeStats()
    with trainplan.ledger.track(model="llama-2-7b", method="lora", batch_size=2, seq_len=2048, gpu="a100",
                         source="team-a", db=url, stats=stats, clock=clock) as run:
        _train(run, clock)
    assert stats.resets == 1 and run.result.added == 1
    (row,) = store.query_runs(store.engine_for(url))
    assert row["meas_peak_allocated_bytes"] == 10 * 2**30 and row["meas_device_bytes"] == 12 * 2**30
    assert row["meas_step_s"] == pytest.approx(1.5)                      # first (warm-up) step skipped
    assert row["meas_tokens_per_s_per_gpu"] == pytest.approx(4096 / 1.5)
    assert row["est_device_bytes"] > 0 and row["environment"]["driver"] == "550.54"
    assert row["model"] == "llama-2-7b" and row["source"] == "team-a"


def test_track_never_breaks_training(tmp_path):
    import trainplan.ledger.track

    clock = Clock()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ZeroDivisionError):               # the training's own error goes through
            with trainplan.ledger.track(model="llama-2-7b", stats=FakeStats(), clock=clock,
                                 db=f"sqlite:///{tmp_path}/unreachable/x.sqlite") as run:
                _train(run, clock, steps=3)
                1 / 0
        with trainplan.ledger.track(model="no-such-model-xyz", stats=FakeStats(), clock=clock,
                             db=f"sqlite:///{tmp_path / 'ok.sqlite'}") as run:  # bad setup: no estimate
            _train(run, clock, steps=2)

        def no_cuda():
            raise RuntimeError("CUDA is not available")
        with trainplan.ledger.track(model="llama-2-7b", stats=no_cuda, clock=clock,
                             db=f"sqlite:///{tmp_path / 'ok.sqlite'}") as run:
            _train(run, clock, steps=3)
    messages = " ".join(str(w.message) for w in caught)
    assert "spooled" in messages and "no memory statistics" in messages and "without an estimate" in messages
    (spooled,) = spool.pending(f"sqlite:///{tmp_path}/unreachable/x.sqlite")
    assert "exception" in spooled["run"]["notes"]
    rows = store.query_runs(store.engine_for(f"sqlite:///{tmp_path / 'ok.sqlite'}"))
    assert {r["model"] for r in rows} == {"no-such-model-xyz", "llama-2-7b"}
    assert [r["estimate"] for r in rows if r["model"] == "no-such-model-xyz"] == [None]
    assert [r["meas_device_bytes"] for r in rows if r["model"] == "llama-2-7b"] == [None]


def test_track_records_on_rank_zero_only(tmp_path, monkeypatch):
    import trainplan.ledger.track

    monkeypatch.setenv("RANK", "3")
    clock = Clock()
    with trainplan.ledger.track(model="llama-2-7b", stats=FakeStats(), clock=clock,
                         db=f"sqlite:///{tmp_path / 'r.sqlite'}") as run:
        _train(run, clock, steps=2)
    assert run.result is None and not (tmp_path / "r.sqlite").exists()


def test_hf_callback_reads_the_trainer_setup(tmp_path):
    from types import SimpleNamespace

    import transformers  # noqa: F401

    import trainplan.ledger.track

    url, clock = f"sqlite:///{tmp_path / 'hf.sqlite'}", Clock()
    callback = trainplan.ledger.track.TrainplanCallback(gpu="a100", source="hf-run", db=url, stats=FakeStats(),
                                                 clock=clock, seq_len=1024)
    args = SimpleNamespace(per_device_train_batch_size=4, gradient_accumulation_steps=2, gradient_checkpointing=True,
                           bf16=True, fp16=False, optim="adamw_torch_fused", world_size=1, deepspeed=None)
    config = SimpleNamespace(to_dict=lambda: {"model_type": "llama", "hidden_size": 512, "num_hidden_layers": 4,
                                              "num_attention_heads": 8, "num_key_value_heads": 8,
                                              "intermediate_size": 1376, "vocab_size": 32000},
                             name_or_path="tiny-llama")
    callback.on_train_begin(args, None, None, model=SimpleNamespace(config=config))
    for _ in range(4):
        clock.t += 0.5
        callback.on_step_end(args, None, None)
    callback.on_train_end(args, None, None)
    (row,) = store.query_runs(store.engine_for(url))
    assert (row["model"], row["batch_size"], row["grad_ckpt"], row["optimizer"]) == ("tiny-llama", 4, "full", "adamw-fused")
    assert row["meas_step_s"] == pytest.approx(0.5) and row["setup"]["model_spec"]["hidden_size"] == 512


def test_lightning_callback_is_lazy():
    import importlib.util

    import trainplan.ledger.track

    if importlib.util.find_spec("lightning") or importlib.util.find_spec("pytorch_lightning"):
        assert trainplan.ledger.track.TrainplanLightningCallback(stats=FakeStats()).tracker is not None
    else:
        with pytest.raises(ImportError):
            trainplan.ledger.track.TrainplanLightningCallback
