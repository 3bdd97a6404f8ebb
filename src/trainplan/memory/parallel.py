"""Model parallelism with Megatron-LM semantics: tensor (TP), pipeline (PP), context (CP) and
expert (EP) parallel. What one GPU holds: which weights are split, which layers it runs, how many
micro-batches' activations it stashes.

Sources:
- Shoeybi et al. 2019 (Megatron-LM) section 3: the first linears of attention (Q, K, V, per head)
  and of the MLP (gate/up) are column-parallel, the second (O, down) row-parallel; embedding and
  output layer are split over the vocabulary; norms and row-parallel biases are replicated.
  Megatron-core keeps MLA's down-projections (q_a, kv_a) and the MoE router replicated.
- Korthikanti et al. 2022, Table 2: activations per layer sbh(10 + 24/t + 5as/ht) with TP only
  (norm, dropout and the column-parallel inputs replicated), sbh(34/t + 5as/ht) with sequence
  parallelism: with SP every tensor the layer saves is split t ways.
- Pipeline stages (which layers a stage holds, the micro-batches it stashes): memory.stages.
- Context parallel (Megatron-core ring attention): the sequence is split cp ways, each GPU keeps
  its own chunk's q, k, v and output; weights are replicated over cp.
- Expert parallel (Megatron-core MoE): each GPU holds num_experts / ep experts, expert tensor
  parallel defaults to tp, and all-to-all routing leaves each GPU ~tokens x top_k routed tokens
  (perfect balance assumed); EP is carved out of dp x cp.
"""

from __future__ import annotations

from trainplan.enums import LOW_RANK_OPTIMIZERS, MATRIX_OPTIMIZERS, Framework, Fsdp, Method, MoeDispatcher, Optimizer
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen, replace
from trainplan.job.training import Layout, TrainingSetup
from trainplan.memory.regime import Regime
from trainplan.memory.stages import Stage, pipeline_slots
from trainplan.memory.state import ModelState, param_groups
from trainplan.model.architecture import Group, LayerSpec, LinearSpec, Role, structure
from trainplan.model.params import lora_key, lora_target_keys, trained_layers
from trainplan.specs import ModelSpec

_COLUMN = frozenset({Role.Q, Role.K, Role.V, Role.QKV, Role.GATE, Role.UP, Role.GATE_UP, Role.Q_B, Role.KV_B})
_ROW = frozenset({Role.O, Role.DOWN})


@frozen
class ParallelConfig:
    """Model-parallel options that are not part of Layout (Megatron flags)."""

    sequence_parallel: bool = True    # --sequence-parallel: Megatron recommends it whenever tp > 1
    virtual_stages: int = 1           # --num-layers-per-virtual-pipeline-stage: interleaved 1F1B chunks
    uneven_pipeline: bool = False     # allow layers % pp != 0 (extra layers go to the last stages)
    head_as_layer: bool = False       # the embedding and the LM head + loss each take a layer's place in the
                                      # split (Megatron account_for_embedding/loss_in_pipeline_split)
    sequential: bool = False          # device_map="auto": the stages run one after another, one micro-batch
    dual_pipe: bool = False           # DualPipe: each rank holds stages i and p - 1 - i (pipeline_stages)

    def __post_init__(self) -> None:
        if self.virtual_stages < 1:
            raise TrainplanError(f"virtual pipeline stages must be >= 1, got {self.virtual_stages}")


@frozen
class GpuParams:
    """Parameters one GPU of a stage holds (after TP and EP splits, before any data-parallel sharding)."""

    trainable: int
    frozen: int
    quantized: int                   # frozen linear weights stored quantized (QLoRA)
    layer_trainable: tuple[int, ...]  # trainable params of each layer of the stage (gradient walk)
    largest_layer: int               # the largest decoder layer: FSDP's wrapping unit
    largest_tensor: int              # the largest single weight: DeepSpeed ZeRO-3's fetch granule
    layers_total: int                # every decoder-layer parameter of the stage
    root: int                        # embedding, final norm and head on this GPU: FSDP's root unit
    root_trainable: int
    small: int                       # parameters in tensors below the ZeRO-3 persistence threshold
    expert_fraction: float           # share of the trainable parameters that are routed experts


def is_model_parallel(layout: Layout) -> bool:
    return layout.tp * layout.pp * layout.cp * layout.ep > 1


def optimizer_refusal(setup: TrainingSetup, *, num_gpus: int, zero: int, fsdp: Fsdp) -> str | None:
    """Why the optimizer cannot run over `num_gpus` GPUs sharded by `zero` / `fsdp` (None: it can): GaLore and
    Muon step whole 2-D weights. The check_layout error, and the planner's reason to skip a shape (the three
    fields a Layout and a planner Shape both have, so the planner builds no Layout to ask)."""
    if setup.optimizer not in MATRIX_OPTIMIZERS:
        return None
    if zero > 0 or fsdp is not Fsdp.NONE:
        # DeepSpeed ZeRO hands the optimizer flat 1-D fp32 partitions (runtime/zero/stage_1_and_2.py
        # single_partition_of_fp32_groups; stage3.py fp32_partitioned_groups_flat) and FSDP1 flat parameters;
        # galore_projector.py projects a 2-D gradient (full_rank_grad.shape[1]); LLaMA-Factory hparams/parser.py:
        # "GaLore and APOLLO are incompatible with DeepSpeed yet". Moonlight's Muon (LLaMA-Factory, ms-swift,
        # axolotl) keeps `use_muon` in its state keyed by the model's own parameters, which the shards are not,
        # and orthogonalises whole matrices; axolotl refuses it with DeepSpeed and runs FSDP2 through its
        # distributed Muon (utils/schemas/validation.py check_muon_deepspeed_fsdp), which trainplan does not model
        what = "orthogonalises" if setup.optimizer is Optimizer.MUON else "projects"
        return (f"--optimizer {setup.optimizer} {what} each weight's 2-D gradient; DeepSpeed ZeRO and FSDP give "
                "the optimizer flattened shards: use plain data parallel (--zero 0, --fsdp none)")
    if setup.optimizer in LOW_RANK_OPTIMIZERS and setup.impl.optimizer_in_backward \
            and setup.framework is not Framework.PYTORCH:
        # transformers trainer_optimizer.py _setup_low_rank_optimizer: "Layer-wise ... does not support DDP" and
        # no gradient accumulation; LLaMA-Factory hparams/parser.py "Distributed training does not support
        # layer-wise GaLore" / "... APOLLO", train/trainer_utils.py "Per-layer GaLore (APOLLO) does not support
        # gradient accumulation"
        name = "APOLLO" if setup.optimizer is Optimizer.APOLLO_ADAMW else "GaLore"
        if num_gpus > 1:
            return (f"layer-wise {name} (the step in the backward) runs on one GPU under the HF Trainer and "
                    "LLaMA-Factory: use --num-gpus 1 or --no-optimizer-in-backward")
        if setup.grad_accum > 1:
            return (f"layer-wise {name} (the step in the backward) takes no gradient accumulation under the HF "
                    "Trainer and LLaMA-Factory: use --grad-accum 1 or --no-optimizer-in-backward")
    return None


def check_layout(setup: TrainingSetup, layout: Layout, cfg: ParallelConfig) -> None:
    """One-line TrainplanError for a model-parallel layout the model cannot take."""
    spec = setup.model
    tp, pp, cp, ep = layout.tp, layout.pp, layout.cp, layout.ep
    if (refused := optimizer_refusal(setup, num_gpus=layout.num_gpus, zero=layout.zero, fsdp=layout.fsdp)) is not None:
        raise TrainplanError(refused)
    if tp > 1:
        for what, value in (("attention heads", spec.num_heads), ("kv heads", spec.num_kv_heads),
                            ("intermediate size", spec.intermediate_size)):
            if value % tp:
                raise TrainplanError(f"--tp {tp} does not divide the {value} {what} of {spec.name} "
                                     f"(Megatron splits them evenly); choose a tp that divides {value}")
    etp = layout.expert_tp
    if layout.etp is not None and layout.etp > 1 and not spec.moe:
        raise TrainplanError(f"--etp {layout.etp} needs a mixture-of-experts model; {spec.name} is dense")
    if etp > 1 and spec.moe and spec.moe.expert_intermediate_size % etp:
        flag = f"--etp {etp}" if layout.etp is not None else f"--tp {tp} (the experts' tensor parallel unless --etp)"
        raise TrainplanError(f"{flag} does not divide the expert intermediate size "
                             f"{spec.moe.expert_intermediate_size} of {spec.name}")
    chunks = pp * cfg.virtual_stages
    # Megatron-Core (transformer_block.py get_num_layers_to_build): with the embedding and loss accounted for,
    # num_layers + 2 is split evenly and the first and the last stage build one layer fewer
    slots = pipeline_slots(spec.num_layers, cfg.head_as_layer and pp > 1)
    if pp > slots:
        what = f"{spec.num_layers} layers" + (" + the embedding and the loss" if slots != spec.num_layers else "")
        raise TrainplanError(f"--pp {pp} is more than the {what} of {spec.name}")
    # torchtitan splits the layers over its stages itself, unevenly where they do not divide
    # (torchtitan/distributed/pipeline_parallel.py generate_llm_fqn_per_model_part)
    uneven = cfg.uneven_pipeline or cfg.sequential or setup.framework is Framework.TORCHTITAN
    if pp > 1 and slots % chunks and not uneven:
        fits = [str(d) for d in range(2, min(spec.num_layers, 64) + 1)
                if slots % (d * cfg.virtual_stages) == 0]
        what = (f"{spec.num_layers} layers + the embedding and the loss" if slots != spec.num_layers
                else f"{spec.num_layers} layers")
        raise TrainplanError(
            f"--pp {pp}{f' x {cfg.virtual_stages} virtual stages' if cfg.virtual_stages > 1 else ''} does "
            f"not divide the {what} of {spec.name} ({slots} % {chunks} = "
            f"{slots % chunks}); --pp {', '.join(fits[:8]) or '1'} would, or allow an uneven split "
            "(--uneven-pipeline)")
    if pp > 1 and cfg.virtual_stages > 1 and spec.num_layers // pp < cfg.virtual_stages:
        raise TrainplanError(f"--pp {pp} x --vpp {cfg.virtual_stages} leaves a stage fewer layers "
                             f"({spec.num_layers // pp}) than virtual stages: lower --vpp")
    if cfg.virtual_stages > 1 and pp > 1 and setup.grad_accum % pp:
        raise TrainplanError(f"the interleaved schedule needs --grad-accum (micro-batches) divisible by "
                             f"--pp {pp}, got {setup.grad_accum}")
    if ep > 1:
        if not spec.moe:
            raise TrainplanError(f"--ep {ep} needs a mixture-of-experts model; {spec.name} is dense")
        if spec.moe.num_experts % ep:
            raise TrainplanError(f"--ep {ep} does not divide the {spec.moe.num_experts} experts of {spec.name}")
    if spec.moe and (ep > 1 or etp > 1) and (layout.num_gpus // pp) % (ep * etp):
        # Megatron-Core parallel_state.py: the expert ranks are ordered tp-ep-dp-pp with tp = expert tp,
        # so a pipeline stage's GPUs must split into ep x expert tp blocks (world % (etp x ep x pp) == 0)
        raise TrainplanError(f"--ep {ep} x expert tensor parallel {etp} = {ep * etp} must divide the "
                             f"{layout.num_gpus // pp} GPUs of a pipeline stage (experts are placed over "
                             f"ep x etp GPUs; --etp sets the experts' tensor parallel, tp when unset)")
    if setup.impl.moe_a2a_overlap:
        # Megatron-Bridge docs (skills/perf-moe-comm-overlap, training/comm_overlap.py validation): expert
        # parallelism > 1, and with pipeline parallelism the interleaved schedule (virtual stages)
        if setup.framework is not Framework.MEGATRON:
            raise TrainplanError("--moe-a2a-overlap is Megatron's combined 1F1B schedule: use --framework megatron")
        if ep <= 1:
            raise TrainplanError("--moe-a2a-overlap hides the expert-parallel all-to-all: it needs --ep > 1")
        if pp > 1 and cfg.virtual_stages <= 1:
            raise TrainplanError("--moe-a2a-overlap with --pp > 1 runs only under the interleaved schedule: "
                                 "add --vpp > 1 (or --no-moe-a2a-overlap)")
    if setup.impl.moe_dispatcher is MoeDispatcher.DEEPEP:
        # DeepEP runs under Megatron's flex dispatcher and in PyTorch-native MoE stacks (NeMo AutoModel's
        # BackendConfig dispatcher, torchtitan-class); it dispatches routed experts' tokens over an EP group
        if not spec.moe or ep <= 1:
            raise TrainplanError("--moe-dispatcher deepep sends an MoE model's tokens over expert parallel: it needs "
                                 "a model with routed experts and --ep > 1")
        if setup.framework not in (Framework.MEGATRON, Framework.TORCHTITAN):
            raise TrainplanError("--moe-dispatcher deepep runs under Megatron's flex dispatcher or an FSDP2 MoE stack "
                                 "(NeMo AutoModel): use --framework megatron or torchtitan")
    if cp > 1 and layout.ulysses and setup.seq_len % cp:
        # Ulysses splits each sequence into one contiguous shard a rank (all-to-all over heads, no ring)
        raise TrainplanError(f"--ulysses {cp} needs --seq-len divisible by {cp}, got {setup.seq_len}")
    if cp > 1 and not layout.ulysses and setup.seq_len % (2 * cp):
        raise TrainplanError(f"--cp {cp} needs --seq-len divisible by 2 x cp = {2 * cp} (load-balanced "
                             f"causal split), got {setup.seq_len}")


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _copies_on_gpu(lin: LinearSpec, ep: int) -> int:
    """Identical linears of this kind on one GPU (routed experts are divided by ep)."""
    return max(1, lin.copies // ep) if lin.group is Group.EXPERTS else lin.copies


def linear_on_gpu(lin: LinearSpec, tp: int, ep: int, etp: int | None = None) -> tuple[int, int]:
    """(weight, bias) parameters of one linear on one GPU: experts / ep, split by the expert tensor
    parallel size etp (None: tp); column-parallel weight and bias / tp; row-parallel weight / tp with its
    bias replicated; router and MLA down-projections replicated."""
    weight, bias = lin.weight_params, lin.bias_params
    if lin.group is Group.EXPERTS:
        weight, bias = weight // ep, bias // ep
        tp = tp if etp is None else etp
    if lin.role in _COLUMN:
        return _ceil_div(weight, tp), _ceil_div(bias, tp)
    if lin.role in _ROW:
        return _ceil_div(weight, tp), bias
    return weight, bias


def _adapter_on_gpu(lin: LinearSpec, rank: int, dora: bool, tp: int, ep: int, etp: int) -> int:
    """LoRA A (r x in) and B (out x r) follow the base linear's split dimension (NeMo/Megatron
    LoRA: A row-parallel under a row-parallel linear, B column-parallel under a column-parallel one)."""
    copies = _copies_on_gpu(lin, ep)
    if lin.group is Group.EXPERTS:
        tp = etp
    n_in, n_out = lin.in_features, lin.out_features
    if lin.role in _COLUMN:
        n_out = _ceil_div(n_out, tp)
    elif lin.role in _ROW:
        n_in = _ceil_div(n_in, tp)
    return copies * (rank * (n_in + n_out) + (n_out if dora else 0))


def _small_tensors(layer: LayerSpec, tp: int, ep: int, etp: int, threshold: int) -> int:
    """Parameters in tensors under `threshold` elements (norm vectors, biases, small routers)."""
    small = layer.norm_params + layer.extra_params   # vectors of hidden/head size
    for lin in layer.linears:
        weight, bias = linear_on_gpu(lin, tp, ep, etp)
        if weight // _copies_on_gpu(lin, ep) < threshold:
            small += weight
        small += bias
    return small


@frozen
class _KindOnGpu:
    """One decoder-layer kind on one GPU (after the TP and EP splits): the sums gpu_params adds per layer."""

    params: int
    weights: int                 # linear weights (what QLoRA quantizes)
    largest_tensor: int
    small: int
    expert_params: int
    adapters: int                # LoRA parameters of the adapted linears


def _kind_on_gpu(layer: LayerSpec, tp: int, ep: int, etp: int, small_threshold: int, lora_names: frozenset[str],
                 rank: int, dora: bool) -> _KindOnGpu:
    split = [linear_on_gpu(lin, tp, ep, etp) for lin in layer.linears]
    return _KindOnGpu(
        params=sum(w + b for w, b in split) + layer.norm_params + layer.extra_params,
        weights=sum(w for w, _ in split),
        largest_tensor=max([0] + [w // _copies_on_gpu(lin, ep) for lin, (w, _) in zip(layer.linears, split)]),
        small=_small_tensors(layer, tp, ep, etp, small_threshold) if small_threshold else 0,
        expert_params=sum(w + b for lin, (w, b) in zip(layer.linears, split) if lin.group is Group.EXPERTS),
        adapters=sum(_adapter_on_gpu(lin, rank, dora, tp, ep, etp) for lin in layer.linears
                     if lora_key(lin) in lora_names) if lora_names else 0)


def _stretches(layers: tuple[int, ...], runs: tuple[tuple[int, int, int], ...],
               trained: range) -> list[tuple[int, int, int]]:
    """(first, end, kind) stretches of a stage's consecutive `layers` where the layer kind and
    whether the layer trains stay the same (a uniform model's stage: one to three stretches)."""
    if not layers:
        return []
    lo, hi = layers[0], layers[-1] + 1
    if hi - lo != len(layers):      # not consecutive: layer by layer
        return [(i, i + 1, next(k for a, b, k in runs if a <= i < b)) for i in layers]
    out = []
    for a, b, kind in runs:
        a, b = max(a, lo), min(b, hi)
        if a >= b:                  # a run outside the stage
            continue
        cuts = sorted({a, b, *(c for c in (trained.start, trained.stop) if a < c < b)})
        out += [(x, y, kind) for x, y in zip(cuts, cuts[1:]) if y > x]
    return out


def gpu_params(setup: TrainingSetup, layout: Layout, stage: Stage, *, small_threshold: int = 0) -> GpuParams:
    """What one GPU of `stage` holds, by kind, for `setup` split by layout.tp, layout.ep and the experts'
    tensor parallel size (each decoder-layer kind is split once; the stage's layers add up their kinds)."""
    spec = setup.model
    st = structure(spec)
    tp, ep, etp = layout.tp, layout.ep, layout.expert_tp
    method = setup.method
    lora_names = lora_target_keys(setup)
    rank, dora = (setup.lora.rank, setup.lora.dora) if setup.lora else (0, False)
    kinds = [_kind_on_gpu(layer, tp, ep, etp, small_threshold, lora_names, rank, dora) for layer, _ in st.layers]
    trained = trained_layers(setup)
    trainable = frozen = quantized = layers_total = small = largest_layer = largest_tensor = experts = 0
    per_layer: list[int] = []
    for lo, hi, kind in _stretches(stage.layers, st.kind_runs, trained):
        k, count = kinds[kind], hi - lo
        layers_total += count * k.params
        largest_layer = max(largest_layer, k.params)
        largest_tensor = max(largest_tensor, k.largest_tensor)
        small += count * k.small
        if lo in trained:
            trainable += count * k.params
            experts += count * k.expert_params
            per_layer += [k.params] * count
            continue
        if method is Method.QLORA:
            quantized += count * k.weights
            frozen += count * (k.params - k.weights)
        else:
            frozen += count * k.params
        trainable += count * k.adapters
        per_layer += [k.adapters] * count
    vocab = _ceil_div(spec.vocab_size, tp)
    embedding = vocab * spec.hidden_size + st.position_params + st.embedding_norm_params
    root = 0
    if stage.has_embedding:
        root += embedding
    if stage.has_head:
        root += st.final_norm_params
        if st.lm_head is not None:
            root += vocab * spec.hidden_size
        elif not stage.has_embedding:          # tied weights: the last stage keeps a copy
            root += vocab * spec.hidden_size
    if small_threshold:     # final norm and embedding norm vectors
        small += st.final_norm_params if stage.has_head else 0
        small += st.embedding_norm_params if stage.has_embedding else 0
    root_trainable = root if method is Method.FULL else 0
    saved = setup.saved_modules
    copies = (vocab * spec.hidden_size) * ((stage.has_embedding and "embed_tokens" in saved)
                                           + (stage.has_head and "lm_head" in saved))
    root += copies                  # peft modules_to_save: trained copies beside the frozen originals
    root_trainable += copies
    trainable += root_trainable
    frozen += root - root_trainable
    largest_tensor = max(largest_tensor, vocab * spec.hidden_size if root else 0)
    return GpuParams(trainable=trainable, frozen=frozen, quantized=quantized, layer_trainable=tuple(per_layer),
                     largest_layer=largest_layer, largest_tensor=largest_tensor, layers_total=layers_total,
                     root=root, root_trainable=root_trainable, small=small,
                     expert_fraction=experts / trainable if trainable else 0.0)


def tp_shard_spec(spec: ModelSpec, tp: int) -> ModelSpec:
    """The model as one TP rank computes it: heads, kv heads, MLP widths and vocabulary / tp.

    Used for activations without sequence parallelism: the layer inputs, norms and dropout masks
    stay full width (replicated), everything inside attention and the MLP is split.
    """
    if tp == 1:
        return spec
    moe = spec.moe
    if moe is not None:
        moe = replace(moe, expert_intermediate_size=moe.expert_intermediate_size // tp,
                      shared_intermediate_size=moe.shared_intermediate_size // tp)
    return replace(spec, name=f"{spec.name} (tp {tp} shard)", num_heads=spec.num_heads // tp,
                   num_kv_heads=spec.num_kv_heads // tp, intermediate_size=spec.intermediate_size // tp,
                   vocab_size=_ceil_div(spec.vocab_size, tp), moe=moe)


def activation_setup(setup: TrainingSetup, layout: Layout, *, split_heads: bool) -> TrainingSetup:
    """The setup one GPU's activations follow: sequence / cp, and the TP shard model if `split_heads`."""
    model = tp_shard_spec(setup.model, layout.tp) if split_heads else setup.model
    return replace(setup, model=model, seq_len=setup.seq_len // layout.cp)


def gpu_state(setup: TrainingSetup, regime: Regime, state: ModelState, params: GpuParams) -> ModelState:
    """One GPU's share of the full model state: each part scaled by this GPU's share of the kind of
    parameter it belongs to (trainable, frozen, quantized). Exact for Adam/SGD/Lion states, which
    are per element; per-tensor details (8-bit small tensors, Adafactor factors) scale proportionally."""
    groups = param_groups(setup)

    def share(part: int, total: int) -> float:
        return part / total if total else 0.0

    ft = share(params.trainable, groups.trainable_params)
    ff = share(params.frozen, groups.frozen_params)
    fq = share(params.quantized, groups.quantized_params)
    trained_w = groups.trainable_params * (regime.adapter_bytes if groups.adapter else regime.trainable_weight_bytes)
    frozen_w = groups.frozen_params * regime.frozen_weight_bytes
    packed = state.weights - trained_w - frozen_w
    everything = share(params.trainable + params.frozen + params.quantized,
                       groups.trainable_params + groups.frozen_params + groups.quantized_params)
    return ModelState(weights=int(trained_w * ft + frozen_w * ff + packed * fq),
                      quant_constants=int(state.quant_constants * fq), gradients=int(state.gradients * ft),
                      master_weights=int(state.master_weights * ft), optimizer=int(state.optimizer * ft),
                      optimizer_paged=int(state.optimizer_paged * ft), optimizer_temp=int(state.optimizer_temp * ft),
                      fp8_cache=int(state.fp8_cache * everything), trainable_params=params.trainable,
                      reference_weights=int(state.reference_weights * everything))
