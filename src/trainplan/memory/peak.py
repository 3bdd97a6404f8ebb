"""Where the peak falls: walk one training step (forward, loss, backward layer by layer, optimizer
step) and take the largest total, instead of summing everything that ever exists.

Each moment is a dict of named components; the peak moment's components are the breakdown.
"""

from __future__ import annotations

from trainplan.enums import GradCkpt
from trainplan.frozen import frozen
from trainplan.memory.activations import LayerActivations
from trainplan.memory.logits import LogitsMemory


@frozen
class StepInputs:
    persistent: dict[str, int]          # weights, master weights, optimizer states, constants
    layers: tuple[LayerActivations, ...]
    layer_grads: tuple[int, ...]        # gradient bytes of each decoder layer's parameters
    head_saved: int                     # final norm + lm_head input saved for backward
    head_weight_copy: int               # autocast copy of the lm_head weight
    head_grad: int                      # lm_head (or tied embedding) gradient bytes
    head_grad_transient: int            # 16-bit weight gradient before the fp32 accumulate
    embedding_grad: int                 # untied embedding gradient, allocated last
    logits: LogitsMemory
    grad_ckpt: GradCkpt
    grads_persist: bool                 # gradient accumulation > 1: grads live through forward
    optimizer_in_backward: bool
    optimizer_temp: int
    activation_offload: bool
    embedding_grad_transient: int = 0   # new embedding gradient added in place to an existing one
    batch_bytes: int = 0                # the micro-batch's token ids, held through the whole step
    shared_saved: int = 0               # saved by every layer (rotary cos/sin): freed after layer 0
    ckpt_mask: tuple[bool, ...] = ()    # per layer: checkpointed? (() = every layer, as grad_ckpt says)
    # one parameter's step temporaries when the step runs in the backward (a per-parameter hook:
    # torchtune optimizer_in_bwd, torchtitan early_step_in_backward, layer-wise GaLore): the largest
    # tensor's (memory.state ModelState.step_temp_one_tensor)
    backward_step_temp: int = 0

    def layer_ckpt(self, i: int) -> GradCkpt:
        if self.ckpt_mask and not self.ckpt_mask[i]:
            return GradCkpt.NONE
        return self.grad_ckpt


@frozen
class Peak:
    phase: str
    components: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.components.values())


_RECOMPUTED = (GradCkpt.FULL, GradCkpt.OP)      # backward reruns the layer's forward (all or part)


def _saved(layer: LayerActivations, ckpt: GradCkpt) -> int:
    if ckpt is GradCkpt.FULL:
        return layer.checkpoint_bytes
    if ckpt is GradCkpt.OP:
        return min(layer.op_saved_bytes, layer.saved_bytes + layer.checkpoint_bytes)
    if ckpt is GradCkpt.SELECTIVE:
        return layer.saved_bytes - layer.detail.get("attention_core", 0) // 2
    return layer.saved_bytes


def _recompute(layer: LayerActivations, ckpt: GradCkpt, saved: int) -> int:
    """What a layer's backward holds beyond what it kept: the recomputed forward's saved tensors
    (the kept ones reused), as the checkpointed input plus everything the layer saves, less what
    was kept."""
    if ckpt not in _RECOMPUTED:
        return 0
    return max(0, layer.checkpoint_bytes + layer.saved_bytes - layer.input_alias_bytes - saved)


def _moment(phase: str, base: dict[str, int], **extra: int) -> Peak:
    """The moment's components: `base` plus `extra`, none of them zero."""
    comps = dict(base)
    for key, value in extra.items():
        if value:
            comps[key] = comps.get(key, 0) + value
    if 0 in comps.values():            # a base component cancelled (or given as zero)
        comps = {k: v for k, v in comps.items() if v}
    return Peak(phase=phase, components=comps)


def _runs(inp: StepInputs) -> list[list]:
    """The decoder layers as runs of equal consecutive layers: [first index, count, layer, saved,
    copies, gradient, checkpointing of the first, of the last]. Equal: the same inventory, saves,
    weight copies and gradient (what the walk adds and removes per layer), so totals move by the same
    amount at each layer of a run and only its ends are built."""
    layers, grads, mask = inp.layers, inp.layer_grads, inp.ckpt_mask
    n = len(layers)
    if not n:             # a pipeline stage that holds only the embedding or only the loss (memory.stages)
        return []
    if not mask and not inp.activation_offload:
        # one checkpointing for all: saves and copies follow the layer object, so a run is a stretch
        # of the same object with the same gradient (the planner's walks: one pass in C where uniform)
        ckpt = inp.grad_ckpt
        if n and grads.count(grads[0]) == n and len(set(map(id, layers))) == 1:
            starts = [0]
        else:
            starts = [0] + [i for i in range(1, n) if layers[i] is not layers[i - 1] or grads[i] != grads[i - 1]]
        out = []
        for k, first in enumerate(starts):
            layer = layers[first]
            count = (starts[k + 1] if k + 1 < len(starts) else n) - first
            copies = 0 if ckpt in _RECOMPUTED else layer.weight_copies_bytes
            out.append([first, count, layer, _saved(layer, ckpt), copies, grads[first], ckpt, ckpt])
        return out
    kept_from = n - 2 if inp.activation_offload else 0   # activation offload: only the layers in flight stay
    per: dict[tuple[int, GradCkpt], tuple[int, int]] = {}
    runs: list[list] = []
    last = None
    for i in range(n):
        layer = layers[i]
        ckpt = GradCkpt.NONE if mask and not mask[i] else inp.grad_ckpt
        sc = per.get((id(layer), ckpt))
        if sc is None:
            sc = per[(id(layer), ckpt)] = (_saved(layer, ckpt),
                                           0 if ckpt in _RECOMPUTED else layer.weight_copies_bytes)
        saved = sc[0] if i >= kept_from else 0
        key = (id(layer), saved, sc[1], grads[i])
        if key == last:
            run = runs[-1]
            run[1] += 1
            run[7] = ckpt
        else:
            runs.append([i, 1, layer, saved, sc[1], grads[i], ckpt, ckpt])
            last = key
    return runs


def simulate_step(inp: StepInputs) -> tuple[Peak, list[Peak]]:
    """Return (the peak moment, every moment considered: the forward and the loss, the head, each
    decoder layer's backward (one per end of a run of equal layers), the embedding, the optimizer)."""
    moments = step_moments(inp)
    return max(moments, key=lambda m: m.total), moments


def step_moments(inp: StepInputs) -> list[Peak]:
    """Every moment simulate_step considers, in walk order."""
    all_grads = sum(inp.layer_grads) + inp.head_grad + inp.embedding_grad
    grads_fwd = all_grads if inp.grads_persist and not inp.optimizer_in_backward else 0
    runs = _runs(inp)
    saved_total = sum(r[1] * r[3] for r in runs)
    copies_total = sum(r[1] * r[4] for r in runs)
    moments: list[Peak] = []
    base = dict(inp.persistent)
    if inp.batch_bytes:
        base["activations"] = base.get("activations", 0) + inp.batch_bytes
    fwd_acts = saved_total + inp.head_saved + inp.shared_saved
    fwd_copies = copies_total + inp.head_weight_copy
    # autocast caches the 16-bit copies of trainable weights until the forward's autocast region
    # exits, so the forward holds all of them even when checkpointing does not save them.
    cached_copies = (sum(r[1] * (r[2].weight_copies_bytes + r[2].cached_copies_bytes) for r in runs)
                     + inp.head_weight_copy)
    moments.append(_moment("forward (loss)", base, gradients=grads_fwd, activations=fwd_acts,
                           autocast_weight_copies=cached_copies, logits_loss=inp.logits.forward_peak_bytes))
    moments += _attention_moments(inp, runs, base, grads_fwd, cached_copies)
    moments += _dora_moments(runs, base, grads_fwd, cached_copies, inp.shared_saved)
    moments.append(_moment("backward (loss)", base, gradients=grads_fwd, activations=fwd_acts,
                           autocast_weight_copies=fwd_copies, logits_loss=inp.logits.backward_peak_bytes))
    grads = grads_fwd
    if not grads_fwd:
        grads += inp.head_grad
    keep_grads = not inp.optimizer_in_backward
    # a step in the backward runs while the activations are still saved: its temporaries at the first
    # gradient, with every activation live
    moments.append(_moment("backward (lm_head)", base, gradients=grads, activations=fwd_acts,
                           autocast_weight_copies=fwd_copies, logits_loss=inp.logits.after_bytes,
                           temporaries=inp.head_grad_transient + (0 if keep_grads else inp.backward_step_temp)))
    acts = saved_total + inp.shared_saved
    live_copies = copies_total
    if not keep_grads:
        grads = 0
    grows = keep_grads and not grads_fwd      # each layer's backward adds its gradient to those kept
    # Backward from the last layer: within a run of equal layers the totals change by the same amount
    # at each layer, so its largest moment is at one end: only the ends are built (walk order and
    # first-of-equals as if every layer were).
    for first, count, layer, saved, copies, layer_grad, first_ckpt, last_ckpt in reversed(runs):
        end = first + count - 1
        for i, ckpt in ((end, last_ckpt), (first, first_ckpt)) if count > 1 else ((end, last_ckpt),):
            behind = end - i               # layers of this run whose backward has run
            _layer_backward(moments, base, i, layer, ckpt, saved, inp.activation_offload,
                            acts=acts - behind * saved, live_copies=live_copies - behind * copies,
                            grads=grads + behind * layer_grad if grows else grads,
                            current_grad=0 if grads_fwd else layer_grad)
        acts -= count * saved
        live_copies -= count * copies
        if grows:
            grads += count * layer_grad
    if inp.embedding_grad or inp.embedding_grad_transient:
        emb = grads + (inp.embedding_grad if not grads_fwd and keep_grads else 0)
        moments.append(_moment("backward (embedding)", base, gradients=emb,
                               temporaries=inp.embedding_grad_transient))
    if keep_grads:
        moments.append(_moment("optimizer step", base, gradients=all_grads, temporaries=inp.optimizer_temp))
    return moments


def _layer_backward(moments: list[Peak], base: dict[str, int], i: int, layer: LayerActivations, ckpt: GradCkpt,
                    saved: int, offloaded: bool, *, acts: int, live_copies: int, grads: int,
                    current_grad: int) -> None:
    """The moments of decoder layer i's backward: acts, live_copies and grads as they stand when it
    starts (everything below it still saved; its gradient not yet made)."""
    recomputed = ckpt in _RECOMPUTED
    recompute = _recompute(layer, ckpt, saved)
    recompute_copies = layer.weight_copies_bytes if recomputed else 0
    if offloaded and not recomputed:
        recompute = layer.saved_bytes - saved
    current = grads + current_grad
    moments.append(_moment(f"backward (layer {i})", base, gradients=current,
                           activations=acts + recompute,
                           autocast_weight_copies=live_copies + recompute_copies,
                           temporaries=layer.transient_bytes))
    if layer.first_transient_bytes:   # the layer's backward starts, none of its gradients yet
        moments.append(_moment(f"backward (layer {i} start)", base, gradients=grads,
                               activations=acts + recompute - layer.first_released_bytes,
                               autocast_weight_copies=live_copies + recompute_copies,
                               temporaries=layer.first_transient_bytes))
    if recomputed and layer.dora_forward_bytes:
        # DoRA's weight norm in the recomputed forward, the layer's saves remade (memory.dora)
        moments.append(_moment(f"backward (layer {i} DoRA recompute)", base, gradients=grads,
                               activations=acts + recompute + layer.dora_forward_bytes,
                               autocast_weight_copies=live_copies + recompute_copies,
                               temporaries=layer.recompute_transient_bytes))
    if layer.attention_peak_bytes:
        # the attention in the layer's recompute, then its backward once the MLP's is done:
        # the layer keeps what it saved up to its attention
        kept = acts + (-layer.input_alias_bytes if recomputed else -saved)
        if recomputed:
            moments.append(_moment(f"backward (layer {i} recompute)", base, gradients=grads,
                                   activations=kept + layer.attention_peak_bytes,
                                   autocast_weight_copies=live_copies + recompute_copies,
                                   temporaries=layer.recompute_transient_bytes))
        moments.append(_moment(f"backward (layer {i} attention)", base, gradients=current,
                               activations=kept + layer.attention_saved_bytes,
                               autocast_weight_copies=live_copies + recompute_copies,
                               temporaries=layer.attention_backward_bytes))


def _attention_moments(inp: StepInputs, runs: list[list], base: dict[str, int], grads: int,
                       copies: int) -> list[Peak]:
    """The forward at a layer's attention, where eager attention (or SDPA's math kernel) holds S x S
    tensors it does not save (activations.attention_transients), at the last layer of each run of
    equal layers: the layers below keep what they saved (a checkpointed one its input), the running
    layer what it made so far. A checkpointed layer saves nothing in its first forward, but holds
    its norm output, q, k, v and the S x S tensors while its attention runs."""
    moments = []
    below = inp.shared_saved
    for first, count, layer, saved, _, _, _, ckpt in runs:
        end = first + count - 1
        below += (count - 1) * saved          # the run's layers before its last
        if layer.attention_peak_bytes:
            if ckpt in _RECOMPUTED:
                own = saved + layer.ckpt_attention_peak_bytes
            else:   # its input, held as the residual, and what it saved up to the attention
                own = layer.checkpoint_bytes - layer.input_alias_bytes + layer.attention_peak_bytes
            moments.append(_moment(f"forward (layer {end})", base, gradients=grads, activations=below + own,
                                   autocast_weight_copies=copies))
        below += saved
    return moments


def _dora_moments(runs: list[list], base: dict[str, int], grads: int, copies: int, shared: int) -> list[Peak]:
    """The forward at DoRA's weight norm in the last layer of each run of equal layers that is not
    recomputed (a recomputed one's is in its backward, with more alive): the layers below keep what
    they saved, the running layer its input and its saves so far (memory.dora)."""
    moments = []
    below = shared
    for first, count, layer, saved, _, _, _, ckpt in runs:
        below += (count - 1) * saved
        if layer.dora_forward_bytes and ckpt not in _RECOMPUTED:
            own = layer.checkpoint_bytes - layer.input_alias_bytes + saved + layer.dora_forward_bytes
            moments.append(_moment(f"forward (layer {first + count - 1} DoRA)", base, gradients=grads,
                                   activations=below + own, autocast_weight_copies=copies))
        below += saved
    return moments


FORWARD, BACKWARD, OPTIMIZER = 0, 1, 2     # phase groups, in step order


def phase_group(phase: str) -> int:
    """The group of a walk moment (as sharding.PhaseExtras.at groups them)."""
    if phase.startswith("forward"):
        return FORWARD
    if phase.startswith("optimizer"):
        return OPTIMIZER
    return BACKWARD


@frozen
class Walk:
    """The step walk without persistent state or layout buffers."""

    moments: tuple[Peak, ...]
    totals: tuple[int, ...]              # each moment's total (Peak.total, summed once)
    groups: tuple[int, ...]              # phase group of each moment
    peaks: tuple[int | None, ...]        # per group: index of its largest moment (first of equals), or None
    per_micro_activations: int           # saved activations at the start of backward (the pipeline stash unit)


def walk_of(inputs: StepInputs) -> Walk:
    moments = step_moments(inputs)
    groups = tuple(phase_group(m.phase) for m in moments)
    peaks: list[int | None] = [None, None, None]
    best = [0, 0, 0]
    per_micro = 0
    totals = tuple(m.total for m in moments)
    for i, (m, g, total) in enumerate(zip(moments, groups, totals)):
        if peaks[g] is None or total > best[g]:
            peaks[g], best[g] = i, total
        if m.phase == "backward (loss)":
            per_micro = m.components.get("activations", 0)
    return Walk(moments=tuple(moments), totals=totals, groups=groups, peaks=tuple(peaks), per_micro_activations=per_micro)
