"""Invariants of the optimizer states (hypothesis) over catalog-shaped models, precisions and methods:
Muon keeps one state per 2-D weight and Adam-mini one per element where AdamW keeps two, so neither ever
holds more than AdamW; Muon's Newton-Schulz FLOPs grow with every matrix dimension."""

from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import tiny_llama
from trainplan.enums import Method, Optimizer, Precision
from trainplan.job.training import LoraConfig, TrainingSetup
from trainplan.memory.regime import resolve_regime
from trainplan.memory.state import model_state
from trainplan.timing.muon import newton_schulz_flops

models = st.sampled_from([tiny_llama(), tiny_llama(tied_embeddings=True, vocab_size=5000),
                          tiny_llama(num_kv_heads=8, intermediate_size=1024)])
precisions = st.sampled_from([Precision.FP32, Precision.BF16, Precision.BF16_PURE])


def _states(model, method, precision, optimizer):
    lora = LoraConfig(rank=8) if method is Method.LORA else None
    setup = TrainingSetup(model=model, method=method, precision=precision, optimizer=optimizer, lora=lora,
                          freeze_trainable_layers=2)
    return model_state(setup, resolve_regime(setup)).optimizer


@settings(max_examples=40, deadline=None)
@given(models, st.sampled_from([Method.FULL, Method.LORA, Method.FREEZE]), precisions)
def test_muon_never_holds_more_than_adamw(model, method, precision):
    muon = _states(model, method, precision, Optimizer.MUON)
    adamw = _states(model, method, precision, Optimizer.ADAMW_FUSED)
    assert 0 < muon < adamw


@settings(max_examples=40, deadline=None)
@given(models, st.sampled_from([Method.FULL, Method.FREEZE]), precisions)
def test_adam_mini_holds_about_half_of_adamw(model, method, precision):
    mini = _states(model, method, precision, Optimizer.ADAM_MINI)
    adamw = _states(model, method, precision, Optimizer.ADAMW_FUSED)
    # one state an element plus a vmean row for each matrix row (at most a fifth of an element per row of a
    # matrix at least five wide), two for vectors
    assert adamw / 2 <= mini < 0.6 * adamw


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 20_000), st.integers(1, 20_000), st.integers(1, 64))
def test_newton_schulz_flops_grow_with_each_dimension(rows, cols, extra):
    base = newton_schulz_flops(rows, cols)
    assert base == newton_schulz_flops(cols, rows) > 0
    assert newton_schulz_flops(rows + extra, cols) > base and newton_schulz_flops(rows, cols + extra) > base
