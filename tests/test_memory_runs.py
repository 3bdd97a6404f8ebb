"""The step walk and the per-GPU parameter sums take runs of equal decoder layers at once
(memory/peak._runs, memory/parallel._stretches, model/architecture.kind_runs): the values here are
worked out by hand, layer by layer."""

from __future__ import annotations

from trainplan.enums import GradCkpt
from trainplan.memory.activations import LayerActivations
from trainplan.memory.logits import LogitsMemory
from trainplan.memory.parallel import _stretches
from trainplan.memory.peak import StepInputs, simulate_step
from trainplan.model.architecture import kind_runs

NO_LOGITS = LogitsMemory(forward_peak_bytes=0, saved_bytes=0, backward_peak_bytes=0, after_bytes=0)


def _layer(saved: int, checkpoint: int = 10) -> LayerActivations:
    return LayerActivations(saved_bytes=saved, weight_copies_bytes=0, checkpoint_bytes=checkpoint,
                            transient_bytes=1, detail={})


def _inputs(layers, grads, **kw) -> StepInputs:
    values = dict(persistent={"weights": 1000}, layers=tuple(layers), layer_grads=tuple(grads), head_saved=0,
                  head_weight_copy=0, head_grad=0, head_grad_transient=0, embedding_grad=0, logits=NO_LOGITS,
                  grad_ckpt=GradCkpt.NONE, grads_persist=False, optimizer_in_backward=False, optimizer_temp=0,
                  activation_offload=False)
    values.update(kw)
    return StepInputs(**values)


def _backward(moments) -> dict[str, int]:
    return {m.phase: m.total for m in moments if m.phase.startswith("backward (layer")}


def test_kind_runs():
    assert kind_runs((0, 0, 1, 1, 1, 0)) == ((0, 2, 0), (2, 5, 1), (5, 6, 0))
    assert kind_runs((3,) * 4) == ((0, 4, 3),)
    assert kind_runs(()) == ()


def test_stretches_cut_by_kind_stage_and_trained_span():
    runs = kind_runs((0, 0, 1, 1, 1, 0))
    # stage = layers 1..4, layers 3..5 train: kind 0 on layer 1; kind 1 on 2 (frozen) and 3-4 (trained)
    assert _stretches((1, 2, 3, 4), runs, range(3, 6)) == [(1, 2, 0), (2, 3, 1), (3, 5, 1)]
    assert _stretches((5,), runs, range(0)) == [(5, 6, 0)]            # the last stage: one layer
    assert _stretches((0, 2), runs, range(0)) == [(0, 1, 0), (2, 3, 1)]   # not consecutive: layer by layer
    assert _stretches((), runs, range(0)) == []


def test_uniform_layers_walk_their_two_ends():
    a = _layer(100)
    peak, moments = simulate_step(_inputs([a] * 4, [7] * 4))
    # backward from layer 3: all 4 x 100 saved, gradients 7 (its own); at layer 0 the other three
    # layers' saves are gone (100 left) and their gradients kept (3 x 7 + 7); +1 transient each
    assert _backward(moments) == {"backward (layer 3)": 1000 + 400 + 7 + 1, "backward (layer 0)": 1000 + 100 + 28 + 1}
    assert peak.phase == "backward (layer 3)"


def test_a_changed_layer_splits_the_run():
    a, b = _layer(100), _layer(300)
    _, moments = simulate_step(_inputs([a, a, b, a], [7, 7, 7, 7]))
    # runs [0, 1] a, [2] b, [3] a: layer 3 holds 100 + 300 + 100 + 100 = 600 and its gradient 7;
    # layer 2: 500 and 7 + 7; layer 1: 200, 21; layer 0: 100, 28
    assert _backward(moments) == {"backward (layer 3)": 1000 + 600 + 7 + 1, "backward (layer 2)": 1000 + 500 + 14 + 1,
                                  "backward (layer 1)": 1000 + 200 + 21 + 1, "backward (layer 0)": 1000 + 100 + 28 + 1}


def test_checkpoint_mask_and_activation_offload():
    a = _layer(100, checkpoint=10)
    # every other layer checkpointed (keeps its 10-byte input and recomputes 10 + 100 in backward)
    _, moments = simulate_step(_inputs([a] * 4, [0] * 4, grad_ckpt=GradCkpt.FULL, ckpt_mask=(True, False, True, False)))
    # saves: 10, 100, 10, 100 = 220. Layer 3 (not checkpointed): 220; layer 2 (checkpointed): 120 +
    # its recompute 10 + 100 - 10 kept = 220; layer 1: 110; layer 0: 10 + 100 = 110
    assert _backward(moments) == {"backward (layer 3)": 1000 + 220 + 1, "backward (layer 2)": 1000 + 220 + 1,
                                  "backward (layer 1)": 1000 + 110 + 1, "backward (layer 0)": 1000 + 110 + 1}
    # activation offload: only the last two layers' saves stay on the GPU (200); layers 1 and 0 bring
    # theirs back for their backward (100 each)
    _, moments = simulate_step(_inputs([a] * 4, [0] * 4, activation_offload=True))
    assert _backward(moments) == {"backward (layer 3)": 1000 + 200 + 1, "backward (layer 2)": 1000 + 100 + 1,
                                  "backward (layer 1)": 1000 + 0 + 100 + 1, "backward (layer 0)": 1000 + 0 + 100 + 1}
