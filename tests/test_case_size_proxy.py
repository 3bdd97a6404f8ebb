"""A time case whose model the catalog does not know and whose case states no architecture is timed as a dense
decoder of its stated size (cases.common.size_proxy_model); a memory case is not (its activations and logits
follow the shape, which is not known).

Hand values: Llama-3.1-8B (Meta's config.json) has 32 layers of width 4096, MLP width 14336 and 8,030,261,248
parameters; each unit of MLP width adds gate, up and down rows in every layer: 3 x 32 x 4096 = 393,216 parameters.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from trainplan.cases.accuracy import evaluate
from trainplan.cases.common import Skip, size_proxy_model
from trainplan.model.params import count_params

DATA = Path(__file__).parent / "data"


def test_a_7b_proxy_solves_the_mlp_width_by_hand():
    spec, how = size_proxy_model({"name": "Acme-7B", "hf_id": "acme/custom-7b", "params_b": 7})
    # 14336 + (7e9 - 8,030,261,248) / 393,216 = 11,715.9, to a multiple of 256: 11,776
    assert spec.intermediate_size == 11776
    assert (spec.num_layers, spec.hidden_size, spec.num_kv_heads, spec.vocab_size) == (32, 4096, 8, 128256)
    assert count_params(spec).total == 8_030_261_248 + (11776 - 14336) * 393_216 == 7_023_628_288
    assert "shaped as llama-3.1-8b" in how and spec.name == "Acme-7B"


def test_the_nearest_shape_on_a_log_scale():
    # 34B: log(70.6 / 34) = 0.73 < log(34 / 8.03) = 1.44, so the 70B shape with a narrower MLP
    spec, _ = size_proxy_model({"name": "Acme-34B", "params_b": 34})
    assert (spec.num_layers, spec.hidden_size) == (80, 8192)
    assert count_params(spec).total == pytest.approx(34e9, rel=0.01)


@pytest.mark.parametrize("model, words", [
    ({"name": "Acme-MoE", "params_b": 30, "moe": {"type": "MoE", "active_params_b": 3}}, "no architecture numbers"),
    ({"name": "Acme-0.2B", "params_b": 0.2}, "below the smallest dense shape"),
    ({"name": "Acme-unsized"}, "no architecture numbers"),
])
def test_no_proxy_without_a_dense_size(model, words):
    with pytest.raises(Skip, match=words):
        size_proxy_model(model)


def _llama31_8b_cases():
    cases = json.loads((DATA / "published_dev2.json").read_text())
    return [c for c in cases if c["id"].startswith("universal-trainer-llama31-full-1xh100")]


def test_an_unknown_time_case_is_timed_as_its_size_and_a_memory_case_is_not():
    time_case, memory_case = sorted(_llama31_8b_cases(), key=lambda c: c["kind"] != "time")[:2]
    assert (time_case["kind"], memory_case["kind"]) == ("time", "memory")
    known = evaluate([time_case])[0]
    unknown = copy.deepcopy(time_case)
    # Llama-3.1-8B's exact size under a name the catalog does not know: the proxy is its own shape
    unknown["model"] = {"name": "Acme-8B", "hf_id": "acme/acme-8b", "params_b": 8.030261248}
    got = evaluate([unknown])[0]
    assert got.skipped is None and got.error == pytest.approx(known.error, abs=1e-9)
    memory_unknown = copy.deepcopy(memory_case)
    memory_unknown["model"] = unknown["model"]
    assert "no architecture numbers" in evaluate([memory_unknown])[0].skipped
