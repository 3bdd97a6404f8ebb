"""Bounded input and safe output files (issue 18, items 2 and 3): trainplan.safeio and every reader
and writer wired to it. Inputs: a FIFO, a device, an oversize, endless, binary or deeply nested file
is refused in one line with exit 2, never a hang. Outputs: never through a symlink, never onto a
FIFO or device, never into a missing directory unless asked, atomically, checked before long work."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainplan import safeio
from trainplan.cli import main
from trainplan.errors import TrainplanError

ROOT = Path(__file__).resolve().parents[1]
SRC = str(ROOT / "src")
CASES = ROOT / "tests" / "fixtures"
FAST_S = 10.0   # a refusal takes well under a second; a hang is stopped here and fails


def cli(*argv: str, env: dict | None = None, cwd: str | None = None) -> tuple[int, str, str, float]:
    """`python -m trainplan.cli ARGV` in a subprocess (a hang is killed after FAST_S and fails)."""
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "trainplan.cli", *argv], capture_output=True, text=True,
                          timeout=FAST_S, check=False, cwd=cwd,
                          env={**os.environ, "PYTHONPATH": SRC, **(env or {})})
    return proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - started


def in_process(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def assert_refused(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    assert err.startswith("trainplan: error: ") and err.count("\n") == 1, err
    assert "internal error" not in err and "Traceback" not in err, err
    for fragment in fragments:
        assert fragment in err, err


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


def db_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


# --- safeio.read_user_text -----------------------------------------------------------------------

def test_read_user_text_reads_a_regular_file_up_to_the_limit(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes("\ufeffhé\n".encode())
    assert safeio.read_user_text(path, what="--x", limit_bytes=7) == "hé\n"   # 3 BOM + 4 bytes: at the limit
    with pytest.raises(TrainplanError, match=r"^--x '.*a\.txt': 7 bytes, over the limit of 6 bytes$"):
        safeio.read_user_text(path, what="--x", limit_bytes=6)


@pytest.mark.parametrize("kind, fragment", [
    ("missing", "no such file"), ("dir", "a directory, not a regular file"),
    ("fifo", "a FIFO (named pipe), not a regular file"), ("device", "a device, not a regular file"),
    ("binary", "a binary file (it holds NUL bytes)"), ("latin1", "not UTF-8 text (byte 2)"),
    ("nul-name", "cannot hold a NUL character"), ("long-name", "File name too long"),
])
def test_read_user_text_refuses_in_one_line(tmp_path, kind, fragment):
    path = {"missing": str(tmp_path / "nope"), "dir": str(tmp_path), "fifo": str(tmp_path / "p"),
            "device": "/dev/zero", "binary": str(tmp_path / "b"), "latin1": str(tmp_path / "l"),
            "nul-name": "a\0b", "long-name": "x" * 300}[kind]
    if kind == "fifo":
        os.mkfifo(path)
    if kind == "binary":
        Path(path).write_bytes(b"{\0}")
    if kind == "latin1":
        Path(path).write_bytes(b"ok\xe9t\xe9")   # latin-1 é
    with pytest.raises(TrainplanError) as info:
        safeio.read_user_text(path, what="--from", limit_bytes=1024)
    message = str(info.value)
    assert message.startswith("--from ") and "\n" not in message and fragment in message


def test_a_fifo_swapped_in_after_the_stat_is_refused_not_read(tmp_path, monkeypatch):
    """stat() saw a regular file; the open (O_NONBLOCK) finds a FIFO: fstat refuses it, nothing blocks."""
    regular, pipe = tmp_path / "regular", tmp_path / "pipe"
    regular.write_text("[1]")
    os.mkfifo(pipe)
    real_stat = os.stat
    monkeypatch.setattr(safeio.os, "stat", lambda p, *a, **k: real_stat(regular) if str(p) == str(pipe)
                        else real_stat(p, *a, **k))
    started = time.perf_counter()
    with pytest.raises(TrainplanError, match="a FIFO"):
        safeio.read_user_text(pipe, what="--cases", limit_bytes=100)
    assert time.perf_counter() - started < 1.0


def test_a_file_that_grows_past_its_stat_size_is_cut_at_the_limit(tmp_path, monkeypatch):
    """An endless file (its stat size says little: /proc, a growing log) is read to limit + 1 bytes."""
    path = tmp_path / "grows"
    path.write_bytes(b"1\n" * 1000)
    small = os.stat_result((stat.S_IFREG | 0o644, 0, 0, 1, 0, 0, 10, 0, 0, 0))
    monkeypatch.setattr(safeio.os, "stat", lambda p, *a, **k: small)
    with pytest.raises(TrainplanError, match=r"more than the limit of 100 bytes"):
        safeio.read_user_bytes(path, what="--lengths-file", limit_bytes=100)


def test_depth_limits(tmp_path):
    assert safeio.check_depth([[[1]]], what="x", limit=3) == [[[1]]]
    with pytest.raises(TrainplanError, match=r"^x 'f': nested more than 3 levels deep$"):
        safeio.check_depth([[[[1]]]], what="x", path="f", limit=3)
    assert safeio.parse_json('{"a": [1, {"b": 2}]}', what="x") == {"a": [1, {"b": 2}]}
    for text, fragment in (("[" * 100_000, "nested more than 64 levels deep"),       # RecursionError in json
                           ("[" * 500 + "]" * 500, "nested more than 64 levels deep"),  # parses; the check refuses
                           ("1" * 5000, "malformed JSON"),                              # over int's digit limit
                           ("{'a': 1}", "malformed JSON at line 1 column 2")):
        with pytest.raises(TrainplanError) as info:
            safeio.parse_json(text, what="--cases", path="c.json")
        assert fragment in str(info.value) and "\n" not in str(info.value)
    shared: list = [1]
    for _ in range(30):   # YAML aliases can share one list 2^30 times without the file growing
        shared = [shared, shared]
    with pytest.raises(TrainplanError, match="lists/mappings"):
        safeio.check_depth(shared, what="--from", limit=64)


# --- safeio.check_output_path / write_atomic -----------------------------------------------------

def test_write_atomic_writes_replaces_and_keeps_the_mode(tmp_path):
    target = tmp_path / "out.json"
    assert safeio.write_atomic(target, "one", what="--out") == str(target)
    assert target.read_text() == "one"
    target.chmod(0o640)
    safeio.write_atomic(target, b"two", what="--out")
    assert target.read_bytes() == b"two" and stat.S_IMODE(target.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]   # no temp file left behind
    nested = tmp_path / "a" / "b" / "c.json"
    safeio.write_atomic(nested, "x", what="--out", make_parents=True)
    assert nested.read_text() == "x"


def test_new_files_follow_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        safeio.write_atomic(tmp_path / "n.json", "x", what="--out")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "n.json").stat().st_mode) == 0o640


@pytest.mark.parametrize("kind, fragment", [
    ("symlink", "a symbolic link; trainplan does not write through links"),
    ("dangling", "a symbolic link"),
    ("fifo", "a FIFO (named pipe), not a regular file"),
    ("device", "a device, not a regular file"),
    ("dir", "a directory, not a regular file"),
    ("missing-parent", "does not exist (create it first)"),
    ("file-as-parent", "Not a directory"),
])
def test_check_output_path_refuses(tmp_path, kind, fragment):
    real = tmp_path / "real.json"
    real.write_text("keep")
    path = {"symlink": tmp_path / "link.json", "dangling": tmp_path / "dangling.json", "fifo": tmp_path / "p",
            "device": Path("/dev/null"), "dir": tmp_path, "missing-parent": tmp_path / "no" / "x.json",
            "file-as-parent": real / "x.json"}[kind]
    if kind == "symlink":
        path.symlink_to(real)
    if kind == "dangling":
        path.symlink_to(tmp_path / "nowhere.json")
    if kind == "fifo":
        os.mkfifo(path)
    with pytest.raises(TrainplanError) as info:
        safeio.write_atomic(path, "new", what="--out")
    assert fragment in str(info.value) and "\n" not in str(info.value)
    assert real.read_text() == "keep"
    if kind in ("symlink", "dangling"):
        assert path.is_symlink() and not (tmp_path / "nowhere.json").exists()
    if kind == "fifo":
        assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert not (tmp_path / "no").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


# --- outputs through the CLI ---------------------------------------------------------------------

def test_calibrate_out_symlink_leaves_link_and_target(tmp_path):
    real = tmp_path / "real.json"
    real.write_text('{"mine": true}')
    link = tmp_path / "cal.json"
    link.symlink_to(real)
    code, _, err = in_process("calibrate", "--db", db_url(tmp_path), "--out", str(link))
    assert_refused(code, err, "--out", "symbolic link")
    assert link.is_symlink() and os.readlink(link) == str(real) and real.read_text() == '{"mine": true}'
    assert not (tmp_path / "ledger.db").exists()   # refused before the ledger was opened


def test_calibrate_out_fifo_and_missing_directory(tmp_path, fifo):
    code, _, err = in_process("calibrate", "--db", db_url(tmp_path), "--out", str(fifo))
    assert_refused(code, err, "a FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    code, _, err = in_process("calibrate", "--db", db_url(tmp_path), "--out", str(tmp_path / "no" / "cal.json"))
    assert_refused(code, err, "does not exist")
    assert not (tmp_path / "no").exists()


def test_calibration_save_is_atomic_and_only_makes_its_own_data_dir(tmp_path, monkeypatch):
    from trainplan.ledger import calibration

    cal = calibration.Calibration(groups=(), min_runs=3, provenance={"x": 1})
    out = tmp_path / "c.json"
    assert calibration.save(cal, str(out)) == str(out)
    assert json.loads(out.read_text())["provenance"] == {"x": 1}
    with pytest.raises(TrainplanError, match="does not exist"):
        calibration.save(cal, str(tmp_path / "missing" / "c.json"))
    monkeypatch.delenv("TRAINPLAN_CALIBRATION", raising=False)
    monkeypatch.setenv("TRAINPLAN_DATA_DIR", str(tmp_path / "xdg" / "trainplan"))
    written = Path(calibration.save(cal))   # the default, in trainplan's data directory: made when missing
    assert written.is_file() and str(written).startswith(str(tmp_path / "xdg"))


def test_calibration_on_a_fifo_is_not_read(tmp_path, fifo):
    from trainplan.ledger import calibration

    started = time.perf_counter()
    assert calibration.load_active(str(fifo)) is None
    assert time.perf_counter() - started < 1.0


def test_trace_plot_in_a_missing_directory_fails_before_tracing(tmp_path, monkeypatch):
    import trainplan.trace.run as trace_run

    calls = []
    monkeypatch.setattr(trace_run, "run_trace", lambda *a, **k: calls.append(a))
    started = time.perf_counter()
    code, _, err = in_process("trace", "--model", "qwen2.5-0.5b", "--plot", str(tmp_path / "missing" / "x.png"))
    assert time.perf_counter() - started < 2.0 and calls == []
    assert_refused(code, err, "--plot", "does not exist")
    real = tmp_path / "real.svg"
    real.write_text("<svg/>")
    (tmp_path / "link.svg").symlink_to(real)
    code, _, err = in_process("trace", "--model", "qwen2.5-0.5b", "--plot", str(tmp_path / "link.svg"))
    assert_refused(code, err, "symbolic link")
    assert calls == [] and real.read_text() == "<svg/>"


def test_run_trace_checks_the_plot_path_before_measuring(tmp_path, monkeypatch):
    import trainplan.trace.run as trace_run
    from trainplan.job.options import JobOptions
    from trainplan.job.resolve import build_setup

    monkeypatch.setattr(trace_run, "_measure", lambda *a, **k: pytest.fail("traced before checking --plot"))
    with pytest.raises(TrainplanError, match="does not exist"):
        trace_run.run_trace(build_setup(JobOptions(model="qwen2.5-0.5b")), plot_path=str(tmp_path / "no" / "x.svg"))


def test_trace_plot_is_written_atomically(tmp_path):
    from trainplan.trace.plot import plot_timeline
    from trainplan.trace.result import TraceResult

    result = TraceResult(model="m", mode="fake", peak_allocated_bytes=2**30, peak_cuda_allocated_bytes=2**30,
                         breakdown_bytes={"parameters": 2**30}, peak_phase="backward", peak_module="",
                         peak_in_recompute=False, per_module={}, live_tensors_at_peak=1,
                         timeline=(("forward", 2**29), ("backward", 2**30)))
    target = tmp_path / "t.svg"
    target.write_text("old")
    target.chmod(0o600)
    assert plot_timeline(result, target) == target
    text = target.read_text()
    assert "<svg" in text and text.rstrip().endswith("</svg>") and stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.svg"]


def test_report_plots_check_and_save(tmp_path):
    from trainplan.report import plots

    real = tmp_path / "real.png"
    real.write_bytes(b"png")
    (tmp_path / "link.png").symlink_to(real)
    with pytest.raises(TrainplanError, match="symbolic link"):
        plots.check_path(str(tmp_path / "link.png"))
    with pytest.raises(TrainplanError, match="does not exist"):
        plots.check_path(str(tmp_path / "no" / "x.svg"))
    with pytest.raises(TrainplanError, match=r"must end in \.png or \.svg"):
        plots.check_path(str(tmp_path / "x.pdf"))

    class Figure:   # what _save asks of a matplotlib figure
        def savefig(self, out, format, dpi):
            out.write(f"{format} at {dpi}".encode())

    assert plots._save(Figure(), str(tmp_path / "f.svg")) == str(tmp_path / "f.svg")
    assert (tmp_path / "f.svg").read_text() == "svg at 130" and real.read_bytes() == b"png"


def test_runs_csv_never_writes_through_a_symlink(tmp_path):
    real = tmp_path / "real.csv"
    real.write_text("mine")
    (tmp_path / "runs.csv").symlink_to(real)
    code, _, err = in_process("runs", "--db", db_url(tmp_path), "--csv", str(tmp_path / "runs.csv"))
    assert_refused(code, err, "--csv", "symbolic link")
    assert real.read_text() == "mine"


def test_table_output_is_checked_first_and_written_atomically(tmp_path):
    real = tmp_path / "real.csv"
    real.write_text("mine")
    (tmp_path / "t.csv").symlink_to(real)
    base = ["table", "--models", "qwen2.5-0.5b", "--methods", "lora", "--gpus", "h100", "--format", "csv"]
    code, _, err = in_process(*base, "--output", str(tmp_path / "t.csv"))
    assert_refused(code, err, "--output", "symbolic link")
    code, _, err = in_process(*base, "--output", str(tmp_path / "no" / "t.csv"))
    assert_refused(code, err, "--output", "does not exist")
    assert real.read_text() == "mine" and not (tmp_path / "no").exists()
    code, _, err = in_process(*base, "--output", str(tmp_path / "new.csv"))
    assert code == 0, err
    assert (tmp_path / "new.csv").read_text().splitlines()[0].count(",") >= 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.csv", "real.csv", "t.csv"]


def test_print_launch_creates_nothing_in_the_temp_dir(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    code, out, err, _ = cli("probe", "--model", "qwen2.5-0.5b", "--gpu", "a100-80gb", "--num-gpus", "2",
                            "--zero", "2", "--print-launch", "--json", env={"TMPDIR": str(tmp)})
    assert code == 0, err
    plan = json.loads(out)
    assert list(tmp.iterdir()) == [] and plan["files_written"] is False
    assert plan["job_file"].startswith(str(tmp)) and plan["job"]["strategy"] == "zero2"
    assert plan["job"]["deepspeed_config"]["zero_optimization"]["stage"] == 2


# --- inputs through the CLI ----------------------------------------------------------------------

def _input_commands(path: Path, tmp_path: Path) -> dict[str, list[str]]:
    return {
        "--from": ["estimate", "--from", str(path)],
        "--lengths-file": ["estimate", "--model", "qwen2.5-0.5b", "--samples", "100", "--lengths-file", str(path)],
        "accuracy --cases": ["accuracy", "--cases", str(path)],
        "import": ["import", str(path), "--db", db_url(tmp_path)],
        "record --file": ["record", "--file", str(path), "--db", db_url(tmp_path)],
        "--model": ["estimate", "--model", str(path)],
    }


@pytest.mark.parametrize("command", ["--from", "--lengths-file", "accuracy --cases", "import", "record --file",
                                     "--model"])
def test_a_fifo_as_input_is_refused_without_blocking(tmp_path, fifo, command):
    code, _, err, wall_s = cli(*_input_commands(fifo, tmp_path)[command])
    assert_refused(code, err)
    assert wall_s < FAST_S
    assert "FIFO" in err or command == "--model"   # --model: "neither a catalog model nor a config.json"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("command", ["--from", "--lengths-file", "accuracy --cases", "import", "record --file"])
def test_dev_zero_oversize_and_binary_inputs(tmp_path, command):
    code, _, err = in_process(*_input_commands(Path("/dev/zero"), tmp_path)[command])
    assert_refused(code, err, "a device, not a regular file")
    big = tmp_path / "big.json"
    with open(big, "wb") as handle:   # sparse: over every limit, nothing written to disk
        handle.truncate(safeio.CASE_FILE_LIMIT_BYTES + 1)
    code, _, err = in_process(*_input_commands(big, tmp_path)[command])
    assert_refused(code, err, "over the limit of")
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"[1, 2\x00, 3]")
    code, _, err = in_process(*_input_commands(binary, tmp_path)[command])
    assert_refused(code, err, "binary file")


@pytest.mark.parametrize("command", ["--from", "--lengths-file", "accuracy --cases", "import", "record --file",
                                     "--model"])
def test_deeply_nested_json_is_one_line(tmp_path, command):
    for depth in (100_000, 200):   # beyond the recursion limit, and one that parses
        deep = tmp_path / "deep.json"
        deep.write_text("[" * depth + "]" * depth)
        code, _, err = in_process(*_input_commands(deep, tmp_path)[command])
        assert_refused(code, err, "nested more than 64 levels deep")


@pytest.mark.parametrize("ext, text", [(".yaml", "a: " + "[" * 100_000), (".toml", "a = " + "[" * 100_000),
                                       (".json", '{"a":' * 100_000)])
def test_deeply_nested_configs_for_from(tmp_path, ext, text):
    path = tmp_path / f"deep{ext}"
    path.write_text(text)
    code, _, err = in_process("estimate", "--from", str(path))
    assert_refused(code, err, "--from", "nested more than 64 levels deep")


def test_lengths_file_values(tmp_path):
    lengths = tmp_path / "l.txt"
    for text, fragment in (("100 -5\n", "must be positive integers"), ("[100, true]", "got True"),
                           ("[1.5]", "got 1.5"), ("12abc\n", "got '12abc'"), ("\n\n", "no lengths"),
                           ('["a\\nb"]', "got 'a\\nb'")):
        lengths.write_text(text)
        code, _, err = in_process(*_input_commands(lengths, tmp_path)["--lengths-file"])
        assert_refused(code, err, fragment)
    lengths.write_text("100\n300 200\r\n")
    code, out, err = in_process(*_input_commands(lengths, tmp_path)["--lengths-file"], "--json")
    assert code == 0, err
    assert json.loads(out)["setup"]


@pytest.mark.parametrize("argv", [
    ["estimate", "--model", "m" * 300], ["estimate", "--model", "org/" + "m" * 300],
    ["estimate", "--model", "m" * 300 + "/config.json"], ["plan", "--model", "m" * 300, "--gpu", "h100"],
    ["estimate", "--from", "f" * 300], ["estimate", "--model", "qwen2.5-0.5b", "--lengths-file", "l" * 300],
    ["accuracy", "--cases", "c" * 300], ["trace", "--model", "qwen2.5-0.5b", "--plot", "p" * 300 + ".svg"],
])
def test_a_300_character_name_is_one_line(argv):
    code, _, err = in_process(*argv)
    assert_refused(code, err)


# --- property: any bytes in an input file are read or refused in one line ------------------------

@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.one_of(st.binary(max_size=300),
                      st.text(alphabet=st.sampled_from('[]{}",:0123456789 \n-abe.\0\\'), max_size=200)
                      .map(str.encode)),
       command=st.sampled_from(["--from", "--lengths-file", "accuracy --cases"]),
       ext=st.sampled_from([".json", ".yaml", ".toml", ".txt", ""]))
def test_any_bytes_are_read_or_refused_in_one_line(tmp_path, data, command, ext):
    path = tmp_path / f"input{ext}"
    path.write_bytes(data)
    code, out, err = in_process(*_input_commands(path, tmp_path)[command])
    assert "internal error" not in err and "Traceback" not in err, err
    if code != 0:
        assert_refused(code, err)
    else:
        assert err == "" or "error" not in err
        assert out
