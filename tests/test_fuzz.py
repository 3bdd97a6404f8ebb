"""The project's own fuzz suite (issue 18): generated bad and edge inputs over every command and the
Python API. Every input must end in a result (exit 0; with --json, strict JSON: no NaN or Infinity)
or in one refusal (exit 2, exactly one stderr line `trainplan: error: ...`; the API raises
TrainplanError). Never an `internal error` (exit 1), a traceback, or a hang (each input is given
FUZZ_TIMEOUT_S of wall time).

Inputs are built from the live parsers, so a flag added later is fuzzed too: a valid base command
line per command, then up to three of that command's flags set to values from a pool of hostile
values (NaN, infinities, huge and negative numbers, empty and multi-line text, wrong types, a FIFO,
a binary file, deeply nested JSON, a missing directory). Hypothesis runs derandomized, so CI sees the
same inputs on every run; `TRAINPLAN_FUZZ_SCALE=10` multiplies the example counts for a longer run.
The counts add up to more than 2,000 inputs (`test_zz_inputs_counted` checks the inputs really run).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import pathlib
import signal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trainplan
from trainplan.cli import COMMANDS, build_parser, main
from trainplan.errors import TrainplanError

ROOT = pathlib.Path(__file__).parent
FIXTURE_TINY = ROOT / "fixtures" / "trace" / "tiny_llama.json"
# Fuzzed output flags (--csv, --output, --out) may be given any pooled path: every path in the pool
# is inside the fuzz fixture's own directory, never a file of the repository.
TINY = "{tiny.json}"
FUZZ_TIMEOUT_S = 30
SCALE = int(os.environ.get("TRAINPLAN_FUZZ_SCALE", "1"))
COUNTS: dict[str, int] = {}


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang()


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    """Hostile and valid files the value pool points at."""
    d = tmp_path_factory.mktemp("fuzz")
    out = {"dir": str(d)}
    (d / "tiny.json").write_text(FIXTURE_TINY.read_text())
    (d / "binary.bin").write_bytes(bytes(range(256)) * 64)
    (d / "nested.json").write_text("[" * 100_000 + "]" * 100_000)
    (d / "empty.json").write_text("")
    (d / "notjson.json").write_text("{not json")
    (d / "list.json").write_text(json.dumps([1, "x", None, {"kind": "memory"}]))
    (d / "cases_bad.json").write_text(json.dumps({"cases": [{"id": ["unhashable"], "kind": "memory",
                                                             "model": "x", "measured": {"peak_mem_gib": "inf"}},
                                                            {"id": "a", "kind": 7}, "string case"]}))
    (d / "lengths_neg.txt").write_text("-5\n10\n")
    (d / "lengths_nan.txt").write_text("nan\n1e308\n")
    (d / "lengths.txt").write_text("100\n2000\n512\n")
    (d / "config_huge.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 10 ** 400,
                                                   "num_hidden_layers": 10 ** 9, "num_attention_heads": 7,
                                                   "intermediate_size": 11008, "vocab_size": 32000}))
    (d / "config_bad.json").write_text(json.dumps({"model_type": "llama", "hidden_size": 768,
                                                  "num_hidden_layers": 2, "num_attention_heads": 7,
                                                  "intermediate_size": -1, "vocab_size": 0,
                                                  "hidden_act": "bogus", "sliding_window": -4}))
    (d / "prices_bad.toml").write_text("[[price]]\ngpu = 'h100'\nprice_per_gpu_hour = nan\ncurrency = 'XXX'\n")
    fifo = d / "fifo"
    os.mkfifo(fifo)
    out.update({name: str(d / name) for name in ("tiny.json", "binary.bin", "nested.json", "empty.json", "notjson.json",
                                                 "list.json", "cases_bad.json", "lengths_neg.txt",
                                                 "lengths_nan.txt", "lengths.txt", "config_huge.json",
                                                 "config_bad.json", "prices_bad.toml", "fifo")})
    out["db"] = f"sqlite:///{d / 'ledger.db'}"
    out["missing_dir"] = str(d / "no" / "such" / "dir" / "out.json")
    return out


# Values any flag may be given. Files are filled in from the fixture (the {name} placeholders).
HOSTILE = ("nan", "NaN", "inf", "-inf", "1e308", "-1e308", "1e-320", "-1", "0", "-0", "3.7", "2.5",
           "99999999999999999999999999999999", "1" * 400, "", " ", "bogus", "True", "no", "none", "auto",
           "a\nb", "\x00", "é中文", "x" * 300, "--json", "-", "0x10", "1_000", "10**9",
           "{binary.bin}", "{nested.json}", "{empty.json}", "{notjson.json}", "{fifo}", "{dir}",
           "{missing_dir}", "{config_huge.json}", "{config_bad.json}", "/dev/null")
PLAUSIBLE = ("1", "2", "8", "4096", "llama-2-7b", "h100", "a100", "rtx4090", "lora", "qlora", "full",
             "bf16", "fp8", "3", "flash", "full", "all", "hf", "megatron", "deepspeed", "0.5",
             "{lengths.txt}", "{lengths_neg.txt}", "{lengths_nan.txt}", "{prices_bad.toml}", "{list.json}",
             "{cases_bad.json}", TINY)

# A valid command line per command (the fuzzer changes up to three flags of it).
BASE: dict[str, list[str]] = {
    "estimate": ["estimate", "--model", "llama-2-7b", "--method", "lora", "--gpu", "h100"],
    "trace": ["trace", "--model", TINY, "--batch-size", "1", "--seq-len", "32"],
    "models": ["models"],
    "gpus": ["gpus"],
    "datasets": ["datasets"],
    "plan": ["plan", "--model", "llama-2-7b", "--method", "lora", "--gpus", "h100,a100", "--max-gpus", "8"],
    "table": ["table", "--models", "llama-2-7b", "--methods", "lora", "--gpus", "h100", "--max-gpus", "8"],
    "fit": ["fit", "--model", "llama-2-7b", "--method", "lora", "--gpu", "h100"],
    "record": ["record", "--db", "{db}", "--model", "llama-2-7b", "--method", "lora", "--gpu", "h100",
               "--peak-allocated-gib", "20"],
    "runs": ["runs", "--db", "{db}"],
    "import": ["import", "{cases_bad.json}", "--db", "{db}"],
    "calibrate": ["calibrate", "--db", "{db}"],
    "accuracy": ["accuracy", "--cases", "{cases_bad.json}"],
    "probe": ["probe", "--model", TINY, "--print-launch"],
    "prices": ["prices"],
    "rates": ["rates"],
    "export": ["export", "--model", "llama-2-7b", "--method", "full", "--gpu", "h100", "--num-gpus", "8", "--zero", "3"],
    "serve": ["serve", "--dry-run"],
}
# flags whose fuzzing would start real long work the suite cannot bound (a GPU trial, a 100-case
# accuracy run): given only hostile file values
_SLOW_WITH_VALID = {("accuracy", "--cases"), ("probe", "--print-launch"), ("probe", "--no-record"),
                    ("serve", "--dry-run")}   # serve without --dry-run starts a server: never dropped below
# examples per command (x SCALE): > 2,000 in all; trace and probe import torch and run models
EXAMPLES = {"estimate": 500, "plan": 150, "table": 100, "fit": 200, "trace": 40, "models": 40, "gpus": 40,
            "datasets": 40,
            "record": 220, "runs": 80, "import": 60, "calibrate": 60, "accuracy": 60, "probe": 40,
            "prices": 80, "rates": 40, "export": 200, "serve": 40}


def _flags(command: str) -> list[tuple[str, bool]]:
    """(option string, takes a value) for each of the command's flags."""
    sub = build_parser(command)._subparsers._group_actions[0].choices[command]
    out = []
    for action in sub._actions:
        if not action.option_strings or "--help" in action.option_strings:
            continue
        out.append((action.option_strings[-1] if action.option_strings[-1].startswith("--")
                    else action.option_strings[0], action.nargs != 0))
    return out


def _has_positional(command: str) -> bool:
    sub = build_parser(command)._subparsers._group_actions[0].choices[command]
    return any(not action.option_strings for action in sub._actions)


def _fill(word: str, files: dict[str, str]) -> str:
    if word.startswith("{") and word.endswith("}") and word[1:-1] in files:
        return files[word[1:-1]]
    return word


def _run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(FUZZ_TIMEOUT_S)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    except _Hang:
        pytest.fail(f"hang (> {FUZZ_TIMEOUT_S} s): trainplan {argv!r}")
    except SystemExit as exc:   # --help / --version exit through argparse
        code = exc.code if isinstance(exc.code, int) else 0
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return code, out.getvalue(), err.getvalue()


def _strict_json(text: str):
    def refuse(name):
        raise ValueError(f"non-JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def check_cli(argv: list[str]) -> None:
    code, out, err = _run_cli(argv)
    where = f"trainplan {argv!r}"
    assert "Traceback" not in out + err, f"traceback from {where}: {err[-2000:]}"
    assert code in (0, 2), f"exit {code} from {where}: {err.strip()[:500]}"
    if code == 2:
        lines = err.strip("\n").split("\n")
        assert len(lines) == 1 and lines[0].startswith("trainplan: error: "), f"refusal of {where} not one line: {err!r}"
    elif "--json" in argv and "--help" not in argv and "-h" not in argv and out.strip():
        try:
            _strict_json(out)
        except ValueError as exc:
            pytest.fail(f"--json output of {where} is not strict JSON ({exc}): {out[:300]!r}")


def _argv_strategy(command: str, files: dict[str, str]):
    flags = _flags(command)
    positional = _has_positional(command)
    base = [_fill(w, files) for w in BASE[command]]
    values = st.sampled_from(HOSTILE + PLAUSIBLE)

    @st.composite
    def build(draw):
        argv = list(base)
        if command != "serve" and draw(st.booleans()) and len(argv) > 1 and draw(st.integers(0, 4)) == 0:
            argv = argv[:1]                        # a required flag left out
        for _ in range(draw(st.integers(0, 3))):
            flag, takes = draw(st.sampled_from(flags))
            if (command, flag) in _SLOW_WITH_VALID and not takes:
                continue
            if takes:
                value = _fill(draw(values), files)
                if (command, flag) in _SLOW_WITH_VALID:
                    value = _fill(draw(st.sampled_from(HOSTILE)), files)
                argv += [flag, value]
            else:
                argv.append(flag)
        if positional and draw(st.integers(0, 2)) == 0:   # a hostile positional (a filter, a file)
            argv.insert(1, _fill(draw(values), files))
        if draw(st.booleans()):
            argv.append("--json")
        return argv

    return build()


@pytest.mark.parametrize("command", list(COMMANDS))
def test_cli_inputs_end_in_a_result_or_one_line(command, files, monkeypatch):
    assert command in BASE and command in EXAMPLES, f"no fuzz base for new command {command!r}"
    monkeypatch.setenv("TRAINPLAN_CONFIG_DIR", files["dir"])
    monkeypatch.chdir(files["dir"])     # outputs named by fuzzed values (--csv 0, --output x) land here

    @settings(max_examples=EXAMPLES[command] * SCALE, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(_argv_strategy(command, files))
    def run(argv):
        COUNTS[command] = COUNTS.get(command, 0) + 1
        check_cli(argv)

    run()


# The Python API: every keyword of trainplan.estimate given hostile Python values.
API_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-10, 10 ** 6), st.just(10 ** 400),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20),
    st.sampled_from(["llama-2-7b", "h100", "lora", "qlora", "full", "bf16", "auto", "no", "all-linear",
                     str(FIXTURE_TINY), "x" * 300, "a\nb"]),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.builds(object),
)
API_KEYS = ("method", "gpu", "num_gpus", "batch_size", "seq_len", "grad_accum", "precision", "optimizer",
            "lora_rank", "lora_alpha", "lora_dropout", "lora_targets", "zero", "fsdp", "offload", "tp", "pp",
            "cp", "nodes", "epochs", "samples", "packing", "grad_ckpt", "attention", "headroom", "quant",
            "efficiency", "framework", "retry_factor", "price_per_gpu_hour", "currency", "vpp", "max_steps",
            "pp_schedule", "fp8_recipe")


def _finite_numbers(obj, path="result") -> None:
    if isinstance(obj, float):
        assert math.isfinite(obj), f"{path} = {obj}"
    elif isinstance(obj, dict):
        for k, v in obj.items():
            _finite_numbers(v, f"{path}.{k}")
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj):
            _finite_numbers(v, f"{path}[{i}]")


@settings(max_examples=400 * SCALE, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.sampled_from(["llama-2-7b", str(FIXTURE_TINY), "qwen2.5-7b"]),
       st.dictionaries(st.sampled_from(API_KEYS), API_VALUES, max_size=4))
def test_api_inputs_end_in_a_result_or_trainplan_error(model, kwargs):
    COUNTS["api"] = COUNTS.get("api", 0) + 1
    kwargs.setdefault("gpu", "h100")
    try:
        result = trainplan.estimate(model, **kwargs)
    except TrainplanError as exc:
        assert "\n" not in str(exc).strip(), f"multi-line error for {kwargs!r}: {exc}"
        return
    _finite_numbers(result.to_dict())
    json.dumps(result.to_dict(), allow_nan=False, default=str)


def test_zz_inputs_counted():
    """The fuzz tests above ran (in this session) at least 2,000 generated inputs in all."""
    if len(COUNTS) < len(COMMANDS) + 1:
        pytest.skip("only part of the fuzz suite ran in this session")   # selected with -k
    total = sum(COUNTS.values())
    print(f"fuzz inputs: {total} ({', '.join(f'{k} {v}' for k, v in sorted(COUNTS.items()))})")
    assert total >= 2000
