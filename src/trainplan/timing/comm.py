"""Communication: the traffic each parallel layout puts on its links (timing.links: the links, the
fabric of a layout and the ring collectives' times), and how much of it compute hides.

Groups are placed Megatron-style: tensor parallel innermost, then context, then data parallel,
pipeline outermost.
"""

from __future__ import annotations

from trainplan.enums import Fsdp, GradCkpt, ZeroStage
from trainplan.frozen import frozen, replace
from trainplan.job.training import Layout
from trainplan.timing.dispatch import DispatchCopies
from trainplan.timing.links import Fabric, allgather_s, reduce_scatter_s, ring_allreduce_s

# --- traffic of a layout -------------------------------------------------------------------------

DDP_BUCKET_BYTES = 25 * 2**20   # torch DistributedDataParallel bucket_cap_mb=25 (PyTorch docs)


@frozen
class CommInputs:
    """What the traffic depends on, per GPU (parameter counts already divided by tp x pp)."""

    trainable_params: float          # parameters whose gradients are reduced
    gathered_params: float           # parameters ZeRO-3/FSDP all-gather (trainable and frozen)
    grad_bytes: int                  # bytes per reduced gradient element
    weight_bytes: float              # bytes per gathered weight element (0.5 for 4-bit)
    micro_batches: int               # gradient-accumulation steps per optimizer step
    fwd_s: float                     # compute time of one micro-batch's forward on this GPU
    bwd_s: float                     # ... of its backward (with recomputation)
    layers: int                      # decoder layers on this GPU's pipeline stage
    activation_bytes: float          # one micro-batch's hidden states: tokens x hidden x bytes
    tp_collectives_per_layer: float  # all-reduce volumes a layer and micro-batch (tp_collectives_per_layer())
    moe_layers: int = 0
    tp_free_moe_layers: int = 0      # of moe_layers: no shared expert, so no TP collective in the MLP half
    moe_dispatch_bytes: float = 0.0  # tokens x top_k x hidden x bytes per all-to-all
    moe_copies: DispatchCopies | None = None   # a DeepEP dispatch's copies of a token (timing.dispatch);
                                               # None: Megatron's alltoall, top_k copies
    kv_bytes: float = 0.0            # one micro-batch's K and V per layer on this GPU (its TP shard of the heads)
    attention_fwd_s: float = 0.0     # the attention kernels' forward of one micro-batch on this GPU (all its layers)
    attention_bwd_s: float = 0.0     # ... their backward
    layer_passes: int = 2            # a layer's passes a micro-batch: forward, backward (3 with full recomputation)
    leaf_params: float = 0.0         # of gathered_params: ZeRO-3 fetches them whole, unprefetched (timing.hf_moe)
    expert_trainable_params: float = 0.0   # of trainable_params: routed experts (this GPU's 1/ep of them)
    expert_gathered_params: float = 0.0    # of gathered_params: routed experts
    overlap_comm: bool = True        # DeepSpeed ZeRO's overlap_comm: False runs its collectives on the compute stream


@frozen
class CommTimes:
    """Per optimizer step on one GPU: time on the wire and the part not hidden behind compute."""

    dp_s: float = 0.0
    dp_exposed_s: float = 0.0
    gather_s: float = 0.0            # ZeRO-3 / FSDP parameter all-gathers
    gather_exposed_s: float = 0.0
    tp_s: float = 0.0                # tensor-parallel all-reduces (never hidden)
    pp_s: float = 0.0                # pipeline point-to-point sends
    ep_s: float = 0.0                # expert-parallel all-to-all
    cp_s: float = 0.0                # context-parallel K/V ring (hidden behind attention)
    cp_exposed_s: float = 0.0        # ... unless nothing overlaps (CUDA_LAUNCH_BLOCKING)
    tp_hidden_s: float = 0.0         # of tp_s, hidden under the GEMMs (Megatron tp_comm_overlap: timing.overlap)
    ep_hidden_s: float = 0.0         # of ep_s, hidden under another micro-batch (combined 1F1B: timing.overlap)
    pp_hidden_s: float = 0.0         # of pp_s, hidden under interleaved compute (overlap_p2p_comm)
    links: tuple[str, ...] = ()

    @property
    def total_s(self) -> float:
        return self.dp_s + self.gather_s + self.tp_s + self.pp_s + self.ep_s + self.cp_s

    @property
    def exposed_s(self) -> float:
        return (self.dp_exposed_s + self.gather_exposed_s + self.tp_s - self.tp_hidden_s + self.pp_s
                - self.pp_hidden_s + self.ep_s - self.ep_hidden_s + self.cp_exposed_s)

    def serialised(self) -> CommTimes:
        """The same traffic with nothing hidden behind compute (synchronous launches: timing.launch)."""
        return replace(self, dp_exposed_s=self.dp_s, gather_exposed_s=self.gather_s, cp_exposed_s=self.cp_s,
                       tp_hidden_s=0.0, pp_hidden_s=0.0, ep_hidden_s=0.0)


def tp_collectives_per_layer(grad_ckpt: GradCkpt) -> float:
    """All-reduce volumes of tensor-parallel traffic one decoder layer makes per micro-batch. Forward: attention
    and MLP each all-gather their sequence-parallel input and reduce-scatter their output (together an
    all-reduce's volume): 2; backward, each the other's gradient: 2. Full recomputation reruns the forward's
    2. torchtitan's op-level selective checkpointing saves what reduce-scatters return but not what
    all-gathers return (its save list: torch.ops._c10d_functional.reduce_scatter_tensor and
    all_to_all_single among the "Communication ops whose outputs should be saved to avoid
    re-communication", no all_gather_into_tensor; torchtitan/distributed/activation_checkpoint.py
    _get_default_save_ops @b5bcd76, the same set as the older parallelize_llama.py `_save_list`); every
    op outside the list is recomputed, so the backward reruns the 2 all-gathers: half an all-reduce each."""
    if grad_ckpt is GradCkpt.FULL:
        return 6.0
    return 5.0 if grad_ckpt is GradCkpt.OP else 4.0


def _overlapped(comm_s: float, window_s: float, tail_s: float) -> float:
    """Exposed part of `comm_s` run behind `window_s` of compute, plus a tail that cannot overlap
    (the last gradient bucket, the first layer's gather)."""
    return max(0.0, comm_s - window_s) + min(comm_s, tail_s)


def _data_parallel(layout: Layout, fab: Fabric, x: CommInputs, trainable: float, gathered_params: float,
                   leaf_params: float, dp: int, per_node: int) -> tuple[float, float, float, float, str]:
    """(reduction, its exposed part, parameter gathers, their exposed part, link name) of `trainable` gradients
    and `gathered_params` weights over a data-parallel group of `dp` ranks with `per_node` in a node,
    spread over the tp x dp x cp consecutive ranks of the layout's data-parallel block."""
    tp, m = layout.tp, x.micro_batches
    dp_span = tp * layout.dp_cp
    grads = trainable * x.grad_bytes
    weights16 = trainable * 2.0
    gathered = gathered_params * x.weight_bytes
    dp_s = dp_exp = gather_s = gather_exp = 0.0
    sharded_params = layout.zero is ZeroStage.PARAMETERS or layout.fsdp is not Fsdp.NONE
    shard_n, shard_span = dp, dp_span
    if layout.fsdp is Fsdp.HYBRID:
        shard_n = max(1, min(dp, fab.gpus_per_node // tp))
        shard_span = tp * shard_n
    bw = fab.bus_bw(shard_span if sharded_params else dp_span, per_node)
    link = fab.link_name(shard_span if sharded_params else dp_span)
    bucket_s = min(DDP_BUCKET_BYTES, grads) / bw if grads else 0.0
    if sharded_params:
        ag = allgather_s(gathered, shard_n, bw)
        rs = reduce_scatter_s(grads, shard_n, bw)
        gather_s = 2 * ag * m
        dp_s = rs * m
        layers = max(1, x.layers)
        # MoE blocks ZeRO-3 fetches whole (z3 leaf modules) block compute, forward and backward
        leaf = min(ag, allgather_s(leaf_params * x.weight_bytes, shard_n, bw))
        ag -= leaf
        fwd_exp = _overlapped(ag, x.fwd_s, ag / layers)
        bwd_exp = _overlapped(ag + rs, x.bwd_s, rs / layers)
        share = ag / (ag + rs) if ag + rs > 0 else 0.0
        gather_exp = m * (fwd_exp + bwd_exp * share + 2 * leaf)
        dp_exp = m * bwd_exp * (1.0 - share)
        if layout.fsdp is Fsdp.HYBRID and dp > shard_n:
            inter_bw = fab.bus_bw(dp_span, 1)
            ar = ring_allreduce_s(grads / shard_n, dp // shard_n, inter_bw)
            dp_s += ar * m
            dp_exp += m * _overlapped(ar, x.bwd_s, bucket_s)
    elif layout.zero is ZeroStage.GRADIENTS:
        rs = reduce_scatter_s(grads, dp, bw)
        dp_s = rs * m
        dp_exp = m * _overlapped(rs, x.bwd_s, bucket_s)
        gather_s = gather_exp = allgather_s(weights16, dp, bw)
    else:
        ar = ring_allreduce_s(grads, dp, bw)     # ZeRO-1 reduce-scatter + gather = same volume
        if layout.zero is ZeroStage.OPTIMIZER:
            rs = ar / 2.0
            dp_s = rs
            dp_exp = _overlapped(rs, x.bwd_s, bucket_s)
            gather_s = gather_exp = allgather_s(weights16, dp, bw)
        else:
            dp_s = ar
            dp_exp = _overlapped(ar, x.bwd_s, bucket_s)
    return dp_s, dp_exp, gather_s, gather_exp, link


def ring_cp_s(x: CommInputs, cp: int, bw_bytes_per_s: float) -> tuple[float, float]:
    """(seconds on the wire, seconds exposed) of the context-parallel K/V ring, one optimizer step.

    Megatron-Core / Transformer Engine (docs/user-guide/features/context_parallel.md): the K/V all-gather
    and the reduce-scatter of their gradients run as point-to-point sends in a ring, each GPU with its
    counterparts in the other TP groups (its own shard of the K/V heads); the backward gathers K/V again.
    So per layer a forward pass sends cp - 1 K/V blocks (again when full recomputation reruns it) and the
    backward cp - 1 blocks of K/V and of their gradients; the ring attention of PyTorch's context_parallel
    (torchtitan) moves the same. Each send overlaps the attention of one block, 1/cp of the layer's
    attention: what a send takes beyond its block is exposed."""
    fwd_passes = x.layer_passes - 1                 # the forward, and its rerun under full recomputation
    send_s = x.kv_bytes / bw_bytes_per_s
    fwd_block_s = x.attention_fwd_s / max(1, x.layers) / cp
    bwd_block_s = x.attention_bwd_s / max(1, x.layers) / cp
    per_layer_wire = (fwd_passes + 2) * (cp - 1) * send_s
    per_layer_exposed = (cp - 1) * (fwd_passes * max(0.0, send_s - fwd_block_s) + max(0.0, 2 * send_s - bwd_block_s))
    return x.micro_batches * x.layers * per_layer_wire, x.micro_batches * x.layers * per_layer_exposed


def layout_comm(layout: Layout, fab: Fabric, x: CommInputs) -> CommTimes:
    """Communication of one optimizer step for `layout` (see the module docstring for placement).

    Overlap assumed: DDP/ZeRO-1 gradient all-reduce runs behind the last micro-batch's backward
    except the last 25 MB bucket; ZeRO-2/3 and FSDP reduce-scatter behind every backward; ZeRO-3/FSDP
    all-gathers are prefetched behind forward and backward except one layer's (and the MoE blocks
    ZeRO-3 fetches whole, x.leaf_params, which wait in both); the ZeRO-1/2 parameter
    all-gather after the optimizer step, tensor-parallel all-reduces, pipeline sends and expert
    all-to-alls are exposed; the context-parallel K/V ring is hidden behind attention as far as each
    block's attention lasts (ring_cp_s).
    """
    # the gradient reduction and the ZeRO/FSDP shards span data x context parallel (Layout.dp_cp: context-
    # parallel ranks hold the same weights), as the memory model shards (memory.sharding.shard_level)
    dp, tp, cp, m = layout.dp_cp, layout.tp, layout.cp, x.micro_batches
    links = []
    dp_s = dp_exp = gather_s = gather_exp = 0.0
    per_node = max(1, fab.gpus_per_node // tp)
    if dp > 1 or layout.expert_dp > 1:
        # dense parameters reduce (and shard) over data x context parallel; routed experts over the
        # expert data-parallel group, ep x expert tp apart: Megatron-Core's expert data parallel group
        # (parallel_state.py, world / (pp x ep x expert tp)), each of its members on a node of its own
        # once the experts fill the node. Without expert parallelism and with expert tp = tp the experts
        # are dense parameters like any other and reduce over the whole group.
        split = layout.ep > 1 or layout.expert_tp != layout.tp
        expert_train = x.expert_trainable_params if split else 0.0
        expert_gathered = x.expert_gathered_params if split else 0.0
        dense = _data_parallel(layout, fab, x, x.trainable_params - expert_train,
                               x.gathered_params - expert_gathered, x.leaf_params, dp, per_node)
        dp_s, dp_exp, gather_s, gather_exp = dense[:4]
        links.append(f"data parallel over {dense[4]}")
        edp = layout.expert_dp      # ranks ep x expert tp apart (Layout.expert_dp)
        if split and edp > 1 and (expert_train > 0 or expert_gathered > 0):
            experts = _data_parallel(layout, fab, x, x.expert_trainable_params, x.expert_gathered_params, 0.0,
                                     edp, max(1, fab.gpus_per_node // (layout.ep * layout.expert_tp)))
            dp_s, dp_exp = dp_s + experts[0], dp_exp + experts[1]
            gather_s, gather_exp = gather_s + experts[2], gather_exp + experts[3]
            links.append(f"expert data parallel ({edp} ranks) over {experts[4]}")
    tp_s = 0.0
    if tp > 1:
        bw = fab.bus_bw(tp)
        links.append(f"tensor parallel over {fab.link_name(tp)}")
        # attention and MLP each gather and reduce-scatter their sequence-parallel input once a pass; an MoE
        # layer without a shared expert has no TP collective in its MLP half: its tokens go through the
        # dispatcher's all-to-all and, with expert tp > 1, the expert-TP gather below (token_dispatcher.py)
        collectives = x.layers * x.tp_collectives_per_layer - x.tp_free_moe_layers * x.tp_collectives_per_layer / 2
        tp_s = m * collectives * ring_allreduce_s(x.activation_bytes, tp, bw)
    pp_s = 0.0
    if layout.pp > 1:
        span = tp * cp * dp * 2          # neighbouring stages are one data-parallel block apart
        bw = fab.bus_bw(span)
        links.append(f"pipeline over {fab.link_name(span)}")
        pp_s = m * 2 * x.activation_bytes / bw
    ep_s = 0.0
    passes = 2 * x.layer_passes      # MoE token exchanges a layer and micro-batch: dispatch and combine a pass
    if layout.ep > 1 and x.moe_layers:
        # Megatron-Core MoEAlltoAllTokenDispatcher (moe/token_dispatcher.py): each rank permutes its
        # own sequence-parallel 1/tp of the tokens to tokens x top_k rows and all-to-alls them over
        # the EP group (dispatch and combine, forward and backward; again with full recompute);
        # no dedup of a token's experts on one rank. The expert ranks are ordered tp-ep-dp-pp with
        # tp = expert tp (parallel_state.py): the EP group is ep ranks expert-tp apart, spanning ep x etp.
        etp, ep = layout.expert_tp, layout.ep
        span = ep * etp
        if span > fab.gpus_per_node:
            off = ep - fab.members_per_node(ep, etp)
            links.append(f"expert parallel over {fab.link_name(span)}; {off}/{ep} of each all-to-all "
                         "leaves the node through each GPU's own NIC")
        else:
            links.append(f"expert parallel over {fab.link_name(span)}")
        if x.moe_copies is not None:
            # DeepEP (timing.dispatch): a token once per destination rank, once per destination node
            ep_s = m * x.moe_layers * passes * fab.dispatch_s(x.activation_bytes / tp, ep, etp, x.moe_copies)
            links.append(f"DeepEP dispatch: {x.moe_copies.rank_copies:.2f} ranks and "
                         f"{x.moe_copies.node_copies:.2f} nodes a token (timing.dispatch)")
        else:
            ep_s = m * x.moe_layers * passes * fab.alltoall_s(x.moe_dispatch_bytes / tp, ep, etp)
    if layout.expert_tp > 1 and x.moe_layers and x.moe_dispatch_bytes:
        # expert tensor parallel: the dispatcher all-gathers the tokens each rank received over the expert
        # TP group (etp consecutive ranks) before the experts and reduce-scatters their output after
        # (token_dispatcher.py gather_from_sequence_parallel_region / reduce_scatter_to_sequence_parallel_
        # region with the expert tp group); forward, backward (each the other's gradient) and recompute
        etp = layout.expert_tp
        links.append(f"expert tensor parallel over {fab.link_name(etp)}")
        ep_s += m * x.moe_layers * passes * allgather_s(etp * x.moe_dispatch_bytes / tp, etp, fab.bus_bw(etp))
    if layout.zero > ZeroStage.NONE and layout.fsdp is Fsdp.NONE and not x.overlap_comm:
        # DeepSpeed without overlap_comm: gradient reduction on the current stream (stage_1_and_2.py
        # `stream = self.reduction_stream if self.overlap_comm else current_stream()`), ZeRO-3's
        # reduce-scatter and parameter all-gathers on the default stream (stage3.py, parameter_offload.py
        # `allgather_stream ... if overlap_comm else default_stream()`): none of it hidden behind compute
        dp_exp, gather_exp = dp_s, gather_s
        links.append("DeepSpeed overlap_comm off: gradient reduction and parameter gathers on the compute stream, "
                     "not overlapped")
    cp_s = cp_exposed = 0.0
    if cp > 1 and layout.ulysses:
        # Ulysses: around each attention the sequence shard of q, k and v is traded for a head shard and the
        # output traded back, four all-to-alls in the forward, their mirror in the backward, again under full
        # recomputation; they run inline, the attention waiting on them (deepspeed/sequence/layer.py
        # DistributedAttention: _SeqAllToAll.apply on the current stream, sp_overlap_comm only with an sp_stream)
        links.append(f"Ulysses sequence parallel over {fab.link_name(tp * cp)}: q, k, v and output all-to-alls "
                     "around attention, not overlapped")
        per_pass = fab.alltoall_s(2 * x.activation_bytes + x.kv_bytes, cp, tp)
        cp_s = cp_exposed = m * x.layers * x.layer_passes * per_pass
    elif cp > 1:
        links.append(f"context parallel over {fab.link_name(tp * cp)}")
        cp_s, cp_exposed = ring_cp_s(x, cp, fab.bus_bw(tp * cp))
    return CommTimes(dp_s=dp_s, dp_exposed_s=dp_exp, gather_s=gather_s, gather_exposed_s=gather_exp,
                     tp_s=tp_s, pp_s=pp_s, ep_s=ep_s, cp_s=cp_s, cp_exposed_s=cp_exposed, links=tuple(links))
