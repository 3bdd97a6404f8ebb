"""What the planner searches: GPU counts in real node shapes, data/tensor/pipeline splits, the
data-parallel engine and offload, and the setup knobs (method, optimizer, checkpointing, attention
kernel, micro-batch x gradient accumulation at a fixed global batch).

Conventions (stated in `trainplan plan --help` and docs/planner.md):
- GPU counts: 1, 2, 4 GPUs (powers of two below a node), then whole nodes of `gpus_per_node`.
- Tensor parallelism stays inside a node (NVLink): a power of two that divides the attention heads,
  the KV heads and the MLP width (Megatron splits them evenly; memory/parallel.check_layout).
- Pipeline parallelism: a divisor of the layer count up to MAX_PP (no uneven split).
- data parallel = GPUs / (tp x pp) divides the global batch, so that micro-batch x accumulation x
  data parallel is exactly the global batch; the micro-batch divides the per-rank batch.
- Engines: without tp/pp, DDP, ZeRO-1/2/3 (optimizer offload to CPU as a variant), FSDP full (and
  hybrid across nodes); one GPU: plain, or ZeRO-Offload. With tp/pp: Megatron with or without the
  distributed optimizer (ZeRO-1), which DeepSpeed's pipeline engine and Megatron support, or FSDP2
  over the data-parallel copies (torchtitan, torchtune).
- Each of these is kept only where the framework runs it (job/frameworks.Capabilities), and a layout
  knob the user gave (`Fixed`: --zero, --fsdp, --offload, --tp, --pp) holds in every shape.
"""

from __future__ import annotations

import functools

from trainplan.enums import (
    Attention,
    Fsdp,
    GradCkpt,
    Method,
    Offload,
    Optimizer,
    ZeroStage,
)
from trainplan.frozen import frozen
from trainplan.job.capabilities import Capabilities
from trainplan.job.training import Layout
from trainplan.specs import ModelSpec

MAX_PP = 16            # deepest pipeline searched
MAX_MICRO_BATCH = 64   # largest micro-batch searched
BELOW_NODE = (1, 2, 4, 8, 16, 32)


@frozen
class Shape:
    """A layout without its GPU type: how many GPUs and how the job is split over them."""

    num_gpus: int
    nodes: int
    tp: int = 1
    pp: int = 1
    zero: ZeroStage = ZeroStage.NONE
    fsdp: Fsdp = Fsdp.NONE
    offload: Offload = Offload.NONE

    @property
    def dp(self) -> int:
        return self.num_gpus // (self.tp * self.pp)

    def layout(self, gpu_id: str) -> Layout:
        return _layout(self, gpu_id)

    def engine(self) -> str:
        """'ZeRO-3 + CPU optimizer offload', 'FSDP full', 'DDP', 'TP 8 x PP 2 + ZeRO-1', ..."""
        parts = []
        if self.tp > 1:
            parts.append(f"TP {self.tp}")
        if self.pp > 1:
            parts.append(f"PP {self.pp}")
        if self.fsdp != "none":
            sharding = f"FSDP {self.fsdp}"
        elif self.zero:
            sharding = f"ZeRO-{self.zero}"
        elif self.num_gpus > 1 and self.dp > 1 and not parts:
            sharding = "DDP"
        else:
            sharding = ""
        text = " x ".join(parts)
        if sharding:
            text = f"{text} + {sharding}" if text else sharding
        if self.offload != "none":
            text += " + CPU offload" if self.offload == "all" else f" + CPU {self.offload} offload"
        return text or "single GPU"

    def describe(self) -> str:
        where = f"{self.num_gpus} GPU" + ("s" if self.num_gpus > 1 else "")
        if self.nodes > 1:
            where += f" ({self.nodes} nodes)"
        return f"{where}, {self.engine()}"


@functools.lru_cache(maxsize=4096)
def _layout(shape: Shape, gpu_id: str) -> Layout:
    """A shape's Layout on one GPU type, built (and validated) once: the search asks for the same
    (shape, GPU) pairs for every setup and optimizer of a family."""
    return Layout(gpu_id=gpu_id, num_gpus=shape.num_gpus, nodes=shape.nodes, zero=shape.zero, fsdp=shape.fsdp,
                  offload=shape.offload, tp=shape.tp, pp=shape.pp)


@frozen
class Knobs:
    """The setup knobs the planner varies."""

    method: Method
    optimizer: Optimizer
    grad_ckpt: GradCkpt
    attention: Attention
    batch_size: int
    grad_accum: int


@frozen
class Fixed:
    """The layout knobs the user gave (None: the planner's to choose)."""

    zero: ZeroStage | None = None
    fsdp: Fsdp | None = None
    offload: Offload | None = None
    tp: int | None = None
    pp: int | None = None

    def allows(self, zero: ZeroStage, fsdp: Fsdp, offload: Offload) -> bool:
        return ((self.zero is None or zero == self.zero) and (self.fsdp is None or fsdp == self.fsdp)
                and (self.offload is None or offload == self.offload))


FREE = Fixed()
# every engine the planner knows (what shardings() searched before frameworks were asked)
ANY = Capabilities(layouts="any", source="", zero=(0, 1, 2, 3), fsdp=True, offload=(Offload.OPTIMIZER,), tp=True,
                   pp=True, mp_zero1=True)


def node_counts(max_gpus: int, gpus_per_node: int) -> tuple[int, ...]:
    """1, 2, 4, ... below one node, then whole nodes up to `max_gpus`."""
    below = [n for n in BELOW_NODE if n < gpus_per_node and n <= max_gpus]
    return tuple(below + [k * gpus_per_node for k in range(1, max_gpus // gpus_per_node + 1)])


def _divides_model(spec: ModelSpec, tp: int) -> bool:
    widths = [spec.num_heads, spec.num_kv_heads, spec.intermediate_size]
    if spec.moe:
        widths.append(spec.moe.expert_intermediate_size)
    return all(w % tp == 0 for w in widths)


def tp_choices(spec: ModelSpec, num_gpus: int, gpus_per_node: int) -> tuple[int, ...]:
    """Powers of two inside one node that split the heads, KV heads and MLP evenly."""
    out, tp = [], 1
    while tp <= min(num_gpus, gpus_per_node):
        if _divides_model(spec, tp):
            out.append(tp)
        tp *= 2
    return tuple(out)


def pp_choices(spec: ModelSpec, max_pp: int = MAX_PP) -> tuple[int, ...]:
    """Divisors of the layer count up to `max_pp` (1 = no pipeline)."""
    return tuple(p for p in range(1, min(max_pp, spec.num_layers) + 1) if spec.num_layers % p == 0)


_PLAIN = (ZeroStage.NONE, Fsdp.NONE, Offload.NONE)


def _zero(stage: int, offload: Offload = Offload.NONE) -> tuple[ZeroStage, Fsdp, Offload]:
    return ZeroStage(stage), Fsdp.NONE, offload


def _candidates(num_gpus: int, nodes: int, tp: int, pp: int, caps: Capabilities,
                offloads: tuple[Offload, ...]) -> list[tuple[ZeroStage, Fsdp, Offload]]:
    if tp * pp > 1:
        if num_gpus // (tp * pp) == 1:
            return [_PLAIN]
        out = [] if caps.mp_fsdp else [_PLAIN]
        if caps.mp_zero1:
            out.append(_zero(1))
        if caps.mp_fsdp:
            out.append((ZeroStage.NONE, Fsdp.FULL, Offload.NONE))
        return out
    offloads = tuple(o for o in offloads if o in caps.offload)
    if num_gpus == 1:
        return [_PLAIN] + [_zero(z, o) for o in offloads for z in (2, 3)
                           if z in caps.zero and (o is Offload.OPTIMIZER or z == 3)]
    out = [_PLAIN] + [_zero(z) for z in caps.zero if z]
    if caps.fsdp:
        out.append((ZeroStage.NONE, Fsdp.FULL, Offload.NONE))
        if nodes > 1:
            out.append((ZeroStage.NONE, Fsdp.HYBRID, Offload.NONE))
    for o in offloads:
        out += [_zero(z, o) for z in caps.zero if z and (o is Offload.OPTIMIZER or z == 3)]
        if caps.fsdp and o is Offload.ALL:
            out += [(ZeroStage.NONE, f, o) for f in ((Fsdp.FULL, Fsdp.HYBRID) if nodes > 1 else (Fsdp.FULL,))]
    return out


def shardings(num_gpus: int, nodes: int, tp: int, pp: int, caps: Capabilities = ANY,
              fixed: Fixed = FREE) -> tuple[tuple[ZeroStage, Fsdp, Offload], ...]:
    """(zero stage, fsdp, offload) choices for one split that the framework runs and the fixed knobs
    allow; non-offloaded variants come first. Offload searched: to CPU of the optimizer (the cheapest
    CPU step), or the kind --offload fixes."""
    offloads = (Offload.OPTIMIZER,) if fixed.offload is None else (fixed.offload,)
    return tuple(c for c in _candidates(num_gpus, nodes, tp, pp, caps, offloads) if fixed.allows(*c))


def splits(spec: ModelSpec, num_gpus: int, gpus_per_node: int, global_batch: int,
           max_pp: int = MAX_PP, caps: Capabilities = ANY, fixed: Fixed = FREE) -> tuple[tuple[int, int], ...]:
    """(tp, pp) pairs for `num_gpus` whose data-parallel size divides the global batch, that the
    framework runs (tp/pp of 1 where it has none) and --tp / --pp allow."""
    out = []
    tps = tp_choices(spec, num_gpus, gpus_per_node) if caps.tp else (1,)
    pps = pp_choices(spec, max_pp) if caps.pp else (1,)
    if fixed.tp is not None:
        tps = tuple(t for t in tps if t == fixed.tp)
    if fixed.pp is not None:
        pps = tuple(p for p in pps if p == fixed.pp)
    for tp in tps:
        for pp in pps:
            if num_gpus % (tp * pp) == 0 and global_batch % (num_gpus // (tp * pp)) == 0:
                out.append((tp, pp))
    return tuple(out)


def shapes(spec: ModelSpec, num_gpus: int, gpus_per_node: int, global_batch: int, caps: Capabilities = ANY,
           fixed: Fixed = FREE) -> tuple[Shape, ...]:
    """Every searched layout of `num_gpus` GPUs."""
    nodes = 1 if num_gpus <= gpus_per_node else num_gpus // gpus_per_node
    return tuple(Shape(num_gpus=num_gpus, nodes=nodes, tp=tp, pp=pp, zero=z, fsdp=f, offload=o)
                 for tp, pp in splits(spec, num_gpus, gpus_per_node, global_batch, caps=caps, fixed=fixed)
                 for z, f, o in shardings(num_gpus, nodes, tp, pp, caps, fixed))


def micro_batches(per_rank: int, limit: int = MAX_MICRO_BATCH) -> tuple[int, ...]:
    """Divisors of the per-rank batch, ascending (gradient accumulation = per_rank / micro-batch)."""
    return tuple(b for b in range(1, min(per_rank, limit) + 1) if per_rank % b == 0)
