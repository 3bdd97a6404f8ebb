"""Model state: weights, quantization constants, gradients, master weights, optimizer states and
the optimizer step's temporaries, in bytes, for one full (unsharded) copy of the model.

Optimizer state sizes:
- torch AdamW: exp_avg + exp_avg_sq in the parameter's dtype (torch/optim/adam.py).
- foreach AdamW (`_multi_tensor_adam`) allocates `exp_avg_sq_sqrt = torch._foreach_sqrt(...)`,
  one full-size temporary per dtype group; the fused kernel allocates none. Stepped in the backward
  (torchtune optimizer_in_bwd builds `config.instantiate(cfg_optimizer, [p])` for every parameter,
  recipes/full_finetune_single_device.py _setup_optimizer; torchtitan early_step_in_backward, one
  optimizer a parameter in OptimizersInBackwardContainer), each step's group is one tensor: its
  temporary is the largest tensor's, not the model's.
- bitsandbytes 8-bit Adam: 1 byte per element per state, block-wise fp32 absmax per 256 elements;
  tensors under `min_8bit_size` = 4096 elements keep fp32 states (bitsandbytes optim/optimizer.py).
  The paged variant holds its states in CUDA unified memory, outside PyTorch's allocator.
- Adafactor (transformers.optimization.Adafactor, beta1=None): factored second moment, rows + cols
  elements for a matrix, a full vector otherwise (Shazeer & Stern 2018).
- SGD with momentum and Lion: one buffer per parameter.
- GaLore (galore_torch galore_projector.py, adamw.py, adamw8bit.py): each projected weight's gradient G
  (out x in = m x n) is multiplied by an orthonormal basis of its top r' = min(r, m, n) singular vectors
  (the right ones, r' x n, when m >= n, else the left, m x r'), kept in the gradient's dtype
  (`get_orthogonal_matrix` casts the fp32 SVD back); Adam's two states are zeros_like the projected
  gradient, max(m, n) x r' elements, in that dtype (8-bit: bitsandbytes' Optimizer2State rules above).
  The other trainable tensors (embeddings, head, norms, biases) get the plain Adam (8-bit) states. Which
  weights: every nn.Linear of the decoder layers (LLaMA-Factory galore_target "all" = find_all_linear_modules,
  GaLore's torchrun_main.py the "attn" / "mlp" linears); the routed experts of transformers 5 are 3-D
  parameters, not nn.Linear, and keep plain states. The step's temporaries, one weight at a time: the
  update projected back to m x n and its scaled copy (adamw.py `project_back(...) * scale`; adamw8bit.py
  clones the weight instead), and at a basis update the SVD's fp32 copy of G with U (m x k) and Vh (k x n),
  k = min(m, n) (torch.linalg.svd full_matrices=False).
- Muon (Moonlight examples/toy_train.py; the copies LLaMA-Factory third_party/muon/muon.py, ms-swift
  swift/optimizers/muon.py and axolotl-contribs-mit muon/muon.py run): every trainable 2-D weight but the
  embeddings and head keeps one `momentum_buffer = zeros_like(g)`; the rest (embeddings, head, vectors; routed
  experts stored 3-D) two AdamW moments zeros_like(g), all in the gradient's dtype. The step, one tensor at a
  time: for a matrix m x n (k = min(m, n)) the Nesterov `g.add(buf)` in that dtype, then Newton-Schulz in bf16
  (`zeropower_via_newtonschulz5`), whose largest moment holds X, B @ X, a * X and their sum (m x n each) with
  A = X X^T and B (k x k); for an AdamW tensor `buf1 / (eps + buf2.sqrt())` holds two temporaries of it.
  torch.optim.Muon (torch/optim/_muon.py) keeps the same buffer and runs the iteration with addmm, a little less.
- Adam-mini (pip adam-mini adam_mini.py, LLaMA-Factory _create_adam_mini_optimizer): `m = zeros_like(p)` for
  every tensor; the second moment `vmean` one element per output neuron (m.size(0)) for embeddings, head, v, o
  and MLP weights, per head for q and k (fewer: counted as rows), one scalar for norms; biases keep Adam's two
  states (vectors are counted so, a few KB). The step's largest moment: `update = m * stepsize` and `-update`,
  two temporaries of the largest tensor.
- APOLLO (apollo_torch apollo.py APOLLOAdamW, random_projector.py): each decoder linear's gradient is projected
  as GaLore's is ("std": the right side when m >= n), onto a seeded random (not SVD) matrix of the same shape,
  kept in the gradient's dtype; Adam's two states zeros_like the projected gradient; the other tensors plain Adam.
  The step's largest moment: `scaled_grad = p.grad * factor` and `scaled_grad / limiter` (the norm-growth
  limiter), two full-size temporaries of the largest projected weight; for a plain tensor `exp_avg_sq.sqrt()`
  and `exp_avg / denom`, two of it.
- QLoRA NF4/FP4: 0.5 byte/param plus an fp32 absmax per 64-element block; double quantization
  stores those absmax in 8 bits with an fp32 constant per 256 blocks (Dettmers et al. 2023, 2.2).
"""

from __future__ import annotations

from trainplan.enums import GALORE_OPTIMIZERS, Method, Optimizer, Quant
from trainplan.frozen import frozen, replace
from trainplan.job.training import QuantConfig, TrainingSetup
from trainplan.memory.regime import Regime
from trainplan.model.architecture import Group, structure
from trainplan.model.params import (
    count_params,
    default_lora_targets,
    lora_rank_factor,
    resolve_lora_targets,
    saved_copy_params,
    trained_layers,
)

MIN_8BIT_SIZE = 4096
BNB_OPT_BLOCK = 256


@frozen
class TensorGroup:
    """`count` tensors of shape (rows, cols); cols == 1 for vectors."""

    rows: int
    cols: int
    count: int
    # a 2-D decoder weight (nn.Linear, or a LoRA adapter matrix): GaLore projects its gradient, Muon
    # orthogonalises its momentum
    projectable: bool = False

    @property
    def numel(self) -> int:
        return self.rows * self.cols * self.count


@frozen
class ParamGroups:
    trainable: tuple[TensorGroup, ...]
    adapter: bool               # trainable tensors are LoRA adapters
    quantized_params: int       # frozen linear weights stored quantized (QLoRA)
    quantized_rows: int         # output rows of quantized linears (int8 row scales)
    frozen_params: int          # frozen, not quantized
    # peft modules_to_save: trained copies of whole modules beside the adapters (peft/utils/other.py
    # ModulesToSaveWrapper: copy.deepcopy of the original), in Regime.copy_bytes
    copies: tuple[TensorGroup, ...] = ()

    @property
    def copy_params(self) -> int:
        return sum(g.numel for g in self.copies)

    @property
    def trainable_params(self) -> int:
        return sum(g.numel for g in self.trainable) + self.copy_params

    @property
    def largest_trainable(self) -> int:
        return max((g.rows * g.cols for g in (*self.trainable, *self.copies)), default=0)


def _layer_tensors(kind, n: int) -> list[TensorGroup]:
    out = []
    for lin in kind.linears:
        out.append(TensorGroup(rows=lin.out_features, cols=lin.in_features, count=lin.copies * n,
                               projectable=lin.group is not Group.EXPERTS))
        if lin.bias:
            out.append(TensorGroup(rows=lin.out_features, cols=1, count=lin.copies * n))
    if kind.norm_params:
        out.append(TensorGroup(rows=kind.norm_params, cols=1, count=n))
    if kind.extra_params:
        out.append(TensorGroup(rows=kind.extra_params, cols=1, count=n))
    return out


def param_groups(setup: TrainingSetup) -> ParamGroups:
    spec = setup.model
    st = structure(spec)
    total = count_params(spec).total
    if setup.method is Method.FULL:
        groups = []
        for kind, n in st.layers:
            groups += _layer_tensors(kind, n)
        groups.append(TensorGroup(rows=spec.vocab_size, cols=spec.hidden_size, count=1))
        if st.position_params:
            groups.append(TensorGroup(rows=st.position_params // spec.hidden_size, cols=spec.hidden_size, count=1))
        if st.lm_head:
            groups.append(TensorGroup(rows=spec.vocab_size, cols=spec.hidden_size, count=1))
        norms = st.final_norm_params + st.embedding_norm_params
        groups.append(TensorGroup(rows=norms, cols=1, count=1))
        return ParamGroups(trainable=tuple(groups), adapter=False, quantized_params=0,
                           quantized_rows=0, frozen_params=0)
    if setup.method is Method.FREEZE:
        groups = []
        for i in trained_layers(setup):
            groups += _layer_tensors(st.layer(i), 1)
        trainable = sum(g.numel for g in groups)
        return ParamGroups(trainable=tuple(groups), adapter=False, quantized_params=0,
                           quantized_rows=0, frozen_params=total - trainable)
    lora = setup.lora
    assert lora is not None
    targets = lora.targets or default_lora_targets(spec)
    groups = []
    for lin, n in resolve_lora_targets(spec, targets):
        copies = lin.copies * n
        groups.append(TensorGroup(rows=lora.rank, cols=lin.in_features, count=copies, projectable=True))
        groups.append(TensorGroup(rows=lin.out_features, cols=lora.rank * lora_rank_factor(spec, lin), count=copies,
                                  projectable=True))
        if lora.dora:
            groups.append(TensorGroup(rows=lin.out_features, cols=1, count=copies))
    copies = tuple(TensorGroup(rows=spec.vocab_size, cols=n // spec.vocab_size, count=1)
                   for n in saved_copy_params(spec, lora.modules_to_save).values())
    quantized = quantized_rows = 0
    if setup.method is Method.QLORA:
        # bitsandbytes quantizes nn.Linear (and Conv1D) modules only (transformers 5.24
        # integrations/bitsandbytes.py replace_with_bnb_linear): the routed experts of an MoE layer,
        # fused 3-D parameters in transformers 5 (e.g. Qwen3MoeExperts.gate_up_proj), and the
        # routers (a plain nn.Parameter) stay in the 16-bit dtype
        for kind, n in st.layers:
            for lin in kind.linears:
                if lin.group in (Group.EXPERTS, Group.ROUTER):
                    continue
                quantized += lin.weight_params * n
                quantized_rows += lin.out_features * lin.copies * n
    return ParamGroups(trainable=tuple(groups), adapter=True, quantized_params=quantized,
                       quantized_rows=quantized_rows, frozen_params=total - quantized, copies=copies)


def quantized_bytes(quant: QuantConfig, params: int, rows: int) -> tuple[int, int]:
    """(packed weight bytes, quantization-constant bytes) for `params` quantized weights."""
    if quant.kind is Quant.INT8:
        return params, rows * 4                      # int8 weights + fp32 scale per output row
    packed = (params + 1) // 2                        # two 4-bit codes per byte
    blocks = -(-params // quant.blocksize)
    if quant.double_quant:
        consts = blocks + 4 * -(-blocks // 256) + 4   # 8-bit absmax + fp32 per 256 blocks + offset
    else:
        consts = 4 * blocks
    return packed, consts


@frozen
class ModelState:
    """Bytes of one full copy of the model state (before any sharding)."""

    weights: int
    quant_constants: int
    gradients: int
    master_weights: int
    optimizer: int
    optimizer_paged: int        # unified memory (paged 8-bit): outside torch's allocator
    optimizer_temp: int         # live only during optimizer.step()
    fp8_cache: int
    trainable_params: int
    reference_weights: int = 0  # a frozen 16-bit reference copy (DPO/KTO full fine-tunes)
    # the temporaries of stepping the largest trainable tensor alone: an optimizer stepped in the backward
    # (one optimizer per parameter, in its post-accumulate-grad hook) holds them with the activations saved
    step_temp_one_tensor: int = 0


def _optimizer_bytes(opt: Optimizer, groups: ParamGroups, elem: int, rank: int = 0) -> tuple[int, int]:
    """(state bytes, step temporaries) for the trainable tensors."""
    if opt in (Optimizer.ADAMW, Optimizer.ADAMW_FUSED, Optimizer.BADAM):   # BAdam: Adam over the active block
        states = 2 * elem * groups.trainable_params
        temp = elem * groups.trainable_params if opt is Optimizer.ADAMW else 0
        return states, temp
    if opt in (Optimizer.ADAMW_8BIT, Optimizer.PAGED_ADAMW_8BIT):
        total = 0
        for g in groups.trainable:
            per = g.rows * g.cols
            if per < MIN_8BIT_SIZE:
                total += 2 * 4 * per * g.count
            else:
                total += (2 * per + 2 * 4 * -(-per // BNB_OPT_BLOCK)) * g.count
        return total, 0
    if opt is Optimizer.ADAFACTOR:
        total = 0
        for g in groups.trainable:
            factored = g.cols > 1 and g.rows > 1
            total += (g.rows + g.cols if factored else g.rows * g.cols) * elem * g.count
        # update = grad**2 + eps, then the update itself, in fp32 for the largest tensor
        return total, 2 * 4 * groups.largest_trainable
    if opt is Optimizer.SGD:
        return elem * groups.trainable_params, 0
    if opt is Optimizer.LION:
        return elem * groups.trainable_params, 2 * elem * groups.largest_trainable
    if opt in GALORE_OPTIMIZERS:
        return _galore_bytes(opt, groups, elem, rank)
    if opt is Optimizer.MUON:
        return _muon_bytes(groups, elem)
    if opt is Optimizer.APOLLO_ADAMW:
        states, _ = _galore_bytes(Optimizer.GALORE_ADAMW, groups, elem, rank)
        big = max((g.rows * g.cols for g in groups.trainable if g.projectable), default=0)
        plain = max((g.rows * g.cols for g in groups.trainable if not g.projectable), default=0)
        return states, 2 * elem * max(big, plain)
    if opt is Optimizer.ADAM_MINI:
        # module docstring: m per element plus one vmean per output row of a matrix; vectors two states
        states = sum(elem * g.count * (g.rows * g.cols + g.rows if g.cols > 1 else 2 * g.rows)
                     for g in groups.trainable)
        return states, 2 * elem * groups.largest_trainable
    raise ValueError(opt)


def _muon_bytes(groups: ParamGroups, elem: int) -> tuple[int, int]:
    """(state bytes, step temporaries) under Muon (module docstring): one momentum buffer per 2-D decoder weight,
    two AdamW moments for the rest; the larger of the largest matrix's Newton-Schulz moment and the largest
    AdamW tensor's two temporaries."""
    states = temp = 0
    for g in groups.trainable:
        if g.projectable:
            states += elem * g.numel
            mn, k = g.rows * g.cols, min(g.rows, g.cols)
            temp = max(temp, elem * mn + 2 * (4 * mn + 2 * k * k))
        else:
            states += 2 * elem * g.numel
            temp = max(temp, 2 * elem * g.rows * g.cols)
    return states, temp


def galore_shape(rows: int, cols: int, rank: int) -> tuple[int, int]:
    """(projected-gradient elements, basis elements) of one m x n weight under GaLore (module docstring)."""
    r = min(rank, rows, cols)
    return max(rows, cols) * r, min(rows, cols) * r


def _galore_bytes(opt: Optimizer, groups: ParamGroups, elem: int, rank: int) -> tuple[int, int]:
    """(state bytes, step temporaries) under GaLore: Adam (8-bit for galore-adamw-8bit) on the projected
    gradients plus the bases, plain Adam (8-bit) on the other tensors; the largest weight's step
    temporaries (module docstring)."""
    base = Optimizer.ADAMW_8BIT if opt is Optimizer.GALORE_ADAMW_8BIT else Optimizer.ADAMW_FUSED
    plain = tuple(g for g in groups.trainable if not g.projectable)
    states, _ = _optimizer_bytes(base, replace(groups, trainable=plain), elem)
    temp = 0
    for g in groups.trainable:
        if not g.projectable:
            continue
        low, basis = galore_shape(g.rows, g.cols, rank)
        low_states, _ = _optimizer_bytes(base, replace(groups, trainable=(TensorGroup(rows=low, cols=1, count=1),)),
                                         elem)
        states += (low_states + basis * elem) * g.count
        k = min(g.rows, g.cols)
        svd = 4 * (g.rows * g.cols + g.rows * k + k * g.cols)
        temp = max(temp, 2 * elem * g.rows * g.cols, svd)
    return states, temp


def model_state(setup: TrainingSetup, regime: Regime) -> ModelState:
    groups = param_groups(setup)
    trainable = groups.trainable_params
    copies = groups.copy_params          # modules_to_save copies: weights, gradients and states in their dtype
    train_w = regime.adapter_bytes if groups.adapter else regime.trainable_weight_bytes
    frozen_w = regime.frozen_weight_bytes
    weights = (trainable - copies) * train_w + groups.frozen_params * frozen_w + copies * regime.copy_bytes
    consts = 0
    if groups.quantized_params and setup.quant is not None:
        packed, consts = quantized_bytes(setup.quant, groups.quantized_params, groups.quantized_rows)
        weights += packed
    grad_elem = regime.adapter_bytes if groups.adapter else regime.grad_bytes
    master = trainable * regime.master_bytes
    state_elem = 4 if regime.master_bytes else (train_w if train_w else regime.state_bytes)
    rank = setup.apollo_rank if setup.optimizer is Optimizer.APOLLO_ADAMW else setup.galore_rank
    states, temp = _optimizer_bytes(setup.optimizer, replace(groups, copies=()), state_elem, rank)
    if copies:
        copy_elem = 4 if regime.master_bytes else regime.copy_bytes
        copy_states, copy_temp = _optimizer_bytes(setup.optimizer, replace(groups, trainable=groups.copies, copies=()),
                                                  copy_elem)
        # foreach AdamW steps its tensors one dtype group at a time (torch/optim/adam.py _multi_tensor_adam,
        # _group_tensors_by_device_and_dtype): one group's temporary when the dtypes agree, the larger otherwise
        temp = temp + copy_temp if copy_elem == state_elem else max(temp, copy_temp)
        states += copy_states
    paged = states if setup.optimizer is Optimizer.PAGED_ADAMW_8BIT else 0
    fp8 = 0
    if regime.fp8_weight_cache_bytes:
        fp8 = regime.fp8_weight_cache_bytes * sum(
            lin.weight_params * n for kind, n in structure(setup.model).layers for lin in kind.linears)
    # the reference model of a preference run (TRL create_reference_model / LLaMA-Factory
    # create_ref_model): the same network frozen, loaded in the compute dtype
    reference = (groups.trainable_params - copies + groups.frozen_params) * regime.compute_bytes \
        if setup.reference_model else 0
    gradients = (trainable - copies) * grad_elem + copies * regime.copy_bytes
    # one tensor stepped alone: foreach AdamW's sqrt of that tensor; the other optimizers' temporaries are
    # already the largest tensor's (or none)
    one = state_elem * groups.largest_trainable if setup.optimizer is Optimizer.ADAMW else temp
    return ModelState(weights=weights, quant_constants=consts, gradients=gradients,
                      master_weights=master, optimizer=states - paged, optimizer_paged=paged,
                      optimizer_temp=temp, fp8_cache=fp8, trainable_params=trainable, reference_weights=reference,
                      step_temp_one_tensor=one)
