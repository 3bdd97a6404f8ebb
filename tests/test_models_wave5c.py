"""Wave 5c of the model catalog: OLMo 1 (model_type olmo; rows in tools/model_rows/wave5c.py). Its LayerNorm has
no weight and no bias (transformers modeling_olmo.py OlmoLayerNorm), so its published totals are the linears and
embeddings alone: a test fails if a norm parameter, a shape or the tie flag is wrong. The activation memory of that
norm (an fp32 copy of its input, mean and rstd) is checked against PyTorch in the trace family grid
(tests/fixtures/trace/tiny_olmo.json, tests/test_trace_agreement.py)."""

from __future__ import annotations

import pytest

from model_counts import check_exact, spec
from trainplan.enums import NormKind
from trainplan.model.hfconfig import spec_from_hf_config
from trainplan.model.params import count_params


@pytest.mark.parametrize("name, total", [
    # code-index 68382314670 / 23372544128 / 24012452805: 6,888,095,744 for OLMo-7B (hf_olmo and -hf)
    ("allenai/OLMo-7B-hf", 6_888_095_744), ("allenai/OLMo-7B", 6_888_095_744),
    # code-index 69646534085 (OLMo-1B reference: 1,176,764,416) and 65819277506 (a full fine-tune's trainable count)
    ("allenai/OLMo-1B-hf", 1_176_764_416), ("OLMo-1B", 1_176_764_416),
])
def test_exact_published_totals(name, total):
    check_exact(name, total)


def test_the_totals_by_hand():
    # 7B: two 50304 x 4096 embeddings + 32 x (4 x 4096^2 + 3 x 4096 x 11008); no norm parameter anywhere
    assert 2 * 50304 * 4096 + 32 * (4 * 4096 ** 2 + 3 * 4096 * 11008) == 6_888_095_744
    # 1B: one (tied) 50304 x 2048 embedding + 16 x (4 x 2048^2 + 3 x 2048 x 8192)
    assert 50304 * 2048 + 16 * (4 * 2048 ** 2 + 3 * 2048 * 8192) == 1_176_764_416


def test_shapes_and_norms():
    seven, one = spec("OLMo-7B"), spec("OLMo-1B")
    assert (seven.num_layers, seven.hidden_size, seven.num_heads, seven.intermediate_size) == (32, 4096, 32, 11008)
    assert (one.num_layers, one.hidden_size, one.num_heads, one.intermediate_size) == (16, 2048, 16, 8192)
    assert not seven.tied_embeddings and one.tied_embeddings
    for s in (seven, one):
        assert s.model_type == "olmo" and s.norm_kind is NormKind.LAYER and s.vocab_size == 50304
        parts = count_params(s)
        assert parts.norms == 0


def test_clip_qkv_is_said_not_modelled():
    config = {"model_type": "olmo", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
              "num_attention_heads": 4, "vocab_size": 100, "clip_qkv": 8.0}
    s = spec_from_hf_config(config, name="olmo-clip")
    assert any("clip_qkv 8.0" in note for note in s.notes)
    assert count_params(s).norms == 0
