"""A published-runs file with a field of an unexpected shape still scores: `trainplan accuracy` reports that
case as not predicted, with the reason, and scores the rest (cases.accuracy.evaluate). Cases of both
development files are mutated field by field: a value another case has at that place, a value from
another place, None, or an odd scalar; every one must come back predicted or skipped with a reason."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainplan.cases.accuracy import evaluate

DATA = Path(__file__).parent / "data"
CASES = [c for name in ("published_dev.json", "published_dev2.json")
         for c in json.loads((DATA / name).read_text(encoding="utf-8"))]


def _leaves(value, prefix=()):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield from _leaves(inner, (*prefix, key))
    else:
        yield prefix, value


POOL: dict[tuple, list] = {}
for _case in CASES:
    for _path, _value in _leaves(_case):
        if _path[0] not in ("id", "kind", "source"):
            POOL.setdefault(_path, []).append(_value)
PATHS = sorted(POOL, key=repr)
ODD = [0, -1, 1, 3, 2.5, "", "unknown", 10**9, [], {}, {"x": 1}, ["a"], True]


def _set(case: dict, path: tuple, value) -> None:
    for key in path[:-1]:
        if not isinstance(case.get(key), dict):
            case[key] = {}
        case = case[key]
    case[path[-1]] = value


mutation = st.tuples(st.sampled_from(PATHS), st.integers(0, 3), st.integers(0, 10**6), st.sampled_from(PATHS))


@settings(max_examples=400, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(range(len(CASES))), st.lists(mutation, min_size=1, max_size=4))
def test_a_mutated_case_is_predicted_or_skipped_with_a_reason(index, mutations):
    case = copy.deepcopy(CASES[index])
    for path, kind, pick, other in mutations:
        values = POOL[path] if kind == 0 else POOL[other] if kind == 1 else ODD
        _set(case, path, None if kind == 3 else values[pick % len(values)])
    [result] = evaluate([case])
    assert result.id == case["id"]
    assert (result.predicted is not None) != bool(result.skipped), result


def _case(case_id: str) -> dict:
    return copy.deepcopy(next(c for c in CASES if c["id"] == case_id))


def test_found_shapes_are_skipped_with_the_reason_and_the_rest_still_scores():
    """Two mutations the random search once found: a list for the LoRA table (AttributeError while
    mapping; a bare number there is now read as the rank, cases.normalize) and a table for the model's name
    (TypeError inside the estimate, hashing the setup)."""
    lora_int = _case("universal-trainer-llama31-lora-1xa100-time")
    lora_int["lora"] = [3]
    dict_name = _case("mpt-bench-7b-seq2048-8xh100_80gb-amp_bf16")
    dict_name["model"]["name"] = {"MPT": "7b"}   # MPT is built from the case's numbers, named by this field
    intact = _case("universal-trainer-llama31-lora-1xa100-time")
    first, second, third = evaluate([lora_int, dict_name, intact])
    assert first.predicted is None and first.skipped.startswith("malformed field (AttributeError")
    assert second.predicted is None and "(TypeError: unhashable type: 'dict')" in second.skipped
    assert third.skipped is None and third.error is not None


def test_a_case_beyond_any_real_model_is_refused_before_it_is_built():
    """A billion layers once reached the layer-by-layer inventory (MemoryError after gigabytes): the case's
    numbers are held to the bounds `trainplan estimate` holds any model to (job/validate.check_model_size)."""
    case = _case("flashattn-training-gpt3-125m-8xa100-80g")
    case["model"]["layers"] = 10**9
    [result] = evaluate([case])
    assert result.predicted is None and "num_layers = 1000000000 is beyond any real model" in result.skipped


def test_accuracy_scores_a_file_whose_cases_lack_fields(tmp_path, capsys):
    """`trainplan accuracy` (not strict) keeps a case without a method or a kind: the method is read from the
    adapter it has (none: full, cases.method_words.with_method), the kind from its measured block (a time metric:
    time, cases.common.case_kind); a case whose block gives both a memory and a time is not predicted and says
    why; an import (strict) still refuses the file."""
    from trainplan.cases import load_cases
    from trainplan.cli import main
    from trainplan.errors import TrainplanError

    no_method, no_kind, whole = (_case("universal-trainer-llama31-full-1xh100-time"),
                                 _case("universal-trainer-llama31-lora-1xh100-time"),
                                 _case("universal-trainer-llama31-qlora-1xh100-time"))
    both = {**_case("universal-trainer-llama31-qlora-1xa100-time"), "kind": None}
    both["measured"] = {**both["measured"], "peak_mem_gib": 40.0}
    del no_method["method"]
    del no_kind["kind"]
    path = tmp_path / "cases.json"
    path.write_text(json.dumps([no_method, no_kind, whole, both]))
    assert main(["accuracy", "--cases", str(path)]) == 0
    out = capsys.readouterr().out
    assert "universal-trainer-llama31-full-1xh100-time:" not in out       # predicted: a full fine-tune
    assert "universal-trainer-llama31-lora-1xh100-time:" not in out       # predicted: its block gives tokens/s
    assert "universal-trainer-llama31-qlora-1xa100-time: kind None is neither memory nor time" in out
    assert "time                               predicted   3/3" in out
    try:
        load_cases(path, strict=True)
    except TrainplanError as exc:
        assert "lacks method" in str(exc)
    else:
        raise AssertionError("an import must refuse a case without a method")
