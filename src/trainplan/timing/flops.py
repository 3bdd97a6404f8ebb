"""FLOPs of one training step, counted from the architecture inventory.

Conventions (stated once, as nanoGPT's `transformer_sizing.ipynb` does):

* FLOPs, not MACs: a multiply-add is 2 FLOPs, so a linear of `in x out` costs `2 in out` per token
  forward (Kaplan et al. 2020, "Scaling laws", section 2.1; Megatron-LM `num_floating_point_operations`).
* Routed experts: each token runs `top_k` of `num_experts` expert MLPs; the router runs for all.
* Attention core per layer and token: `2 ctx d_qk` for QK^T plus `2 ctx d_v` for AV, summed over
  heads, where `ctx` is the number of keys a query attends to. Two conventions:
  - FULL: ctx = s. What Megatron (Narayanan et al. 2021, section 5.1: 96 B s l h^2 (1 + s/6h +
    V/16lh) with full recomputation), PaLM (Chowdhery et al. 2022, appendix B: 6N + 12 L H Q T)
    and MosaicML llm-foundry
    (`attn_flops_per_seq = n_layers * 2 * 2 * d_model * seq_len**2`) count for MFU.
  - CAUSAL: ctx = (s + 1) / 2, the mean over a causal mask: what flash / SDPA kernels actually
    compute (they skip masked blocks). Eager attention computes the full s x s scores, then masks.
  MFU defaults to FULL (the sources above); hardware FLOPs use what the kernel runs.
* Backward: for a trainable weight, the input gradient and the weight gradient each cost one
  forward (2x forward). A frozen weight (LoRA/QLoRA base, freeze-tuning's lower layers) needs only
  the input gradient (1x), and layers below the lowest trainable layer need no backward at all
  (LLaMA-Factory freeze tuning). The attention core has no weights: dS = dO V^T, dV = P^T dO,
  dQ = dS K, dK = dS^T Q is 2x its forward. Flash kernels also recompute QK^T inside their
  backward (2.5x, FlashAttention-2 paper, Dao 2023); like MosaicML's and Megatron's HFU, that
  stays inside the attention kernel's efficiency (trainplan.timing.efficiency) and is not counted here.
* LoRA adapters (Hu et al. 2021): A (in -> r) and B (r -> out) are trainable linears:
  forward 2 r (in + out) per token, backward 2x that. DoRA with dropout active reruns the base
  linear on the dropped input (peft tuners/lora/dora.py DoraLinearLayer.forward: `base_result is
  None` -> F.linear(x, W)): one more forward of each adapted linear and its input gradient, counted
  with the adapters (in the adapters' dtype, as peft runs it). The weight norm's eye(in) @ A^T and
  B products (2 r in (in + out) a micro-batch, not a token) are left to its traffic
  (timing.traffic.dora_bytes_per_token), which is larger.
* Recomputation (Korthikanti et al. 2022, "Reducing activation recomputation"): full
  checkpointing reruns the forward of every layer that has a backward; selective reruns only the
  attention core (QK^T, softmax, AV). The LM head is not checkpointed.
* The embedding lookup and norms, activations, residual adds are not matmuls and are not counted
  here (their cost is memory traffic, see `trainplan.timing.efficiency`).

`FlopsPerToken.model` is 3x the forward of the dense-equivalent model (linears with active
experts, LM head, attention under the MFU convention; adapters excluded): the community's 6N +
attention, the MFU numerator of a full fine-tune. For methods that run less backward (LoRA, freeze
tuning) the MFU numerator is what they run (timing.parts.model_flops_per_token). Hardware FLOPs
(for HFU and for time) are what actually runs: forward + backward as needed by the method +
recomputation.
"""

from __future__ import annotations

import functools
from enum import StrEnum

from trainplan.enums import Attention, GradCkpt, Method, simple_enum
from trainplan.frozen import frozen
from trainplan.job.training import TrainingSetup
from trainplan.memory.dora import reruns_base
from trainplan.model.architecture import Group, LayerSpec, LinearSpec, structure
from trainplan.model.params import first_trained_layer, lora_key, lora_target_keys, trained_layers
from trainplan.specs import ModelSpec
from trainplan.timing.attention import padded_sdpa


@simple_enum(StrEnum)
class AttnConvention:
    FULL = "full"      # every query attends to all s keys (MFU convention of Megatron/PaLM/MosaicML)
    CAUSAL = "causal"  # mean (s + 1) / 2 keys per query (what flash/SDPA kernels compute)


def kernel_convention(attention: Attention, padded_sdpa: bool = False) -> AttnConvention:
    """Flash and SDPA (flash / memory-efficient backends with is_causal) skip masked blocks; eager
    attention materialises the full s x s scores and masks them afterwards, and so does SDPA given
    transformers' 4D padding mask (`padded_sdpa`, trainplan.timing.attention.padded_sdpa): the
    memory-efficient kernel with an additive mask visits every block."""
    return AttnConvention.FULL if attention is Attention.EAGER or padded_sdpa else AttnConvention.CAUSAL


def attention_context(seq_len: int, convention: AttnConvention, window: int | None = None) -> float:
    """Mean number of keys one query attends to in a sequence of `seq_len` tokens.

    FULL: s (or the window). CAUSAL: sum_{i=1..s} min(i, w) / s, i.e. (s + 1) / 2 without a
    sliding window w.
    """
    s = seq_len
    w = min(window, s) if window else s
    if convention is AttnConvention.FULL:
        return float(w)
    return (w * (w + 1) / 2 + (s - w) * w) / s


def attention_core_flops(spec: ModelSpec, seq_len: int, convention: AttnConvention,
                         layer: LayerSpec | None = None) -> float:
    """Forward FLOPs per token of one layer's QK^T and AV: 2 ctx (H d_qk) + 2 ctx (H d_v).

    The window is spec.sliding_window, except for a `layer` of a model whose layers alternate local
    and full attention (LayerSpec.attention): full layers have none, local ones the window (Llama 4:
    its attention chunk, counted as a window of that size)."""
    if spec.mla:
        d_qk = spec.num_heads * spec.mla.qk_head_dim
        d_v = spec.num_heads * spec.mla.v_head_dim
    else:
        d_qk = d_v = spec.num_heads * spec.head_dim
    ctx = attention_context(seq_len, convention, _layer_window(spec, layer))
    return 2.0 * ctx * d_qk + 2.0 * ctx * d_v


def _layer_window(spec: ModelSpec, layer: LayerSpec | None) -> int | None:
    if layer is None or not layer.attention:
        return spec.sliding_window
    if layer.attention == "full":
        return None
    if spec.model_type.startswith("llama4"):
        import json

        config = json.loads(spec.hf_config_json) if spec.hf_config_json else {}
        config = config.get("text_config", config) if spec.model_type == "llama4" else config
        return config.get("attention_chunk_size", 8192)
    return spec.sliding_window


def active_copies(lin: LinearSpec, spec: ModelSpec) -> float:
    """How many of a linear's `copies` one token runs through: top_k for routed experts."""
    if lin.group is Group.EXPERTS and spec.moe is not None:
        return float(spec.moe.top_k)
    return float(lin.copies)


def linear_flops(lin: LinearSpec, spec: ModelSpec) -> float:
    """Forward FLOPs per token of one linear (bias adds ignored): 2 x in x out x active copies."""
    return 2.0 * lin.in_features * lin.out_features * active_copies(lin, spec)


def adapter_flops(lin: LinearSpec, spec: ModelSpec, rank: int) -> float:
    """Forward FLOPs per token of a LoRA adapter on `lin`: 2 r (in + out) per active copy."""
    return 2.0 * rank * (lin.in_features + lin.out_features) * active_copies(lin, spec)


def op_sac_recompute_flops(layer, spec: ModelSpec, lora_names, rank: int) -> float:
    """Forward FLOPs per token that op-level selective checkpointing reruns in backward: every
    second matmul of the block in forward order (memory/activations.op_sac_saves; the adapters'
    two matmuls follow their base linear)."""
    mms: list[float] = []
    for lin in layer.linears:
        copies = active_copies(lin, spec)
        mms.append(2.0 * lin.in_features * lin.out_features * copies)
        if rank and lora_key(lin) in lora_names:
            mms += [2.0 * rank * lin.in_features * copies, 2.0 * rank * lin.out_features * copies]
    return sum(mms[1::2])


def lm_head_flops(spec: ModelSpec) -> float:
    """Forward FLOPs per token of the output projection (tied or not): 2 x hidden x vocab."""
    return 2.0 * spec.hidden_size * spec.vocab_size


# LoRA targets are keyed by group and name (routed experts share names with shared experts).
lora_target_names = lora_target_keys
first_backward_layer = first_trained_layer


@frozen
class FlopsPerToken:
    """FLOPs per token of one training sequence of `seq_len` tokens, by named part (decimal)."""

    seq_len: int
    attention_convention: AttnConvention      # what the kernel computes (hardware FLOPs)
    mfu_convention: AttnConvention            # what MFU counts
    linear_fwd: float                         # decoder-layer linears (routed experts at top_k)
    attention_fwd: float                      # QK^T + AV, kernel convention
    lm_head_fwd: float
    adapter_fwd: float                        # LoRA A and B
    linear_bwd_input: float                   # input gradients of linears in layers with backward
    linear_bwd_weight: float                  # weight gradients of trainable linears
    attention_bwd: float
    lm_head_bwd: float
    adapter_bwd: float
    recompute: float                          # gradient checkpointing: forward rerun
    recompute_attention: float                # of which the attention core
    attention_fwd_mfu: float                  # attention forward under the MFU convention
    reference: float = 0.0                    # the reference model's no-grad forward (DPO/KTO)
    reference_attention: float = 0.0          # of which the attention core

    # The sums below are read several times per estimate and a record is kept per setup and length
    # (flops_per_token): computed once, kept in the instance dict (fields, eq, hash, repr unaffected).
    @functools.cached_property
    def forward(self) -> float:
        return self.linear_fwd + self.attention_fwd + self.lm_head_fwd + self.adapter_fwd

    @functools.cached_property
    def backward(self) -> float:
        return (self.linear_bwd_input + self.linear_bwd_weight + self.attention_bwd
                + self.lm_head_bwd + self.adapter_bwd)

    @functools.cached_property
    def hardware(self) -> float:
        """What runs: forward + backward + recomputation (for HFU and time)."""
        return self.forward + self.backward + self.recompute + self.reference

    @functools.cached_property
    def attention_hardware(self) -> float:
        """The attention-core share of `hardware` (forward, backward and its recomputation)."""
        return self.attention_fwd + self.attention_bwd + self.recompute_attention + self.reference_attention

    @functools.cached_property
    def linear_hardware(self) -> float:
        """What runs outside the attention core: `hardware` less `attention_hardware` (the linears, the LM head,
        the adapters), the FLOPs timed at the matmul efficiency."""
        return self.hardware - self.attention_hardware

    @functools.cached_property
    def attention_fwd_hardware(self) -> float:
        """The attention core's FLOPs that run as forwards: the forward, its recomputation and a
        reference forward (timed at the kernel's forward rate; the rest of attention_hardware at its
        backward rate)."""
        return self.attention_fwd + self.recompute_attention + self.reference_attention

    @functools.cached_property
    def hardware_mfu_attention(self) -> float:
        """`hardware` with the attention core counted as MFU counts it (mfu_convention, full mask by
        default), as published HFU figures count it: llm-foundry's benchmarking collect_results.py
        `hfu_w_attn = (4 * flops_per_seq + 4 * attn_flops_per_seq)` with attn_flops_per_seq =
        n_layers * 2 * 2 * d_model * seq_len**2 under activation checkpointing."""
        if not self.attention_fwd:
            return self.hardware
        return self.hardware + self.attention_hardware * (self.attention_fwd_mfu / self.attention_fwd - 1.0)

    @functools.cached_property
    def model(self) -> float:
        """MFU numerator: 3 x forward of the dense-equivalent model (6N + attention)."""
        return 3.0 * (self.linear_fwd + self.lm_head_fwd + self.attention_fwd_mfu)

    def parts(self) -> dict[str, float]:
        return {"linear_fwd": self.linear_fwd, "attention_fwd": self.attention_fwd,
                "lm_head_fwd": self.lm_head_fwd, "adapter_fwd": self.adapter_fwd,
                "linear_bwd_input": self.linear_bwd_input, "linear_bwd_weight": self.linear_bwd_weight,
                "attention_bwd": self.attention_bwd, "lm_head_bwd": self.lm_head_bwd,
                "adapter_bwd": self.adapter_bwd, "recompute": self.recompute}


def flops_per_token(setup: TrainingSetup, *, seq_len: int | None = None,
                    attention_convention: AttnConvention | None = None,
                    mfu_convention: AttnConvention = AttnConvention.FULL) -> FlopsPerToken:
    """Training FLOPs per token for `setup`, layer by layer (see the module docstring).

    `seq_len` is the length of the sequences the kernel sees (default setup.seq_len);
    `attention_convention` defaults to what setup.attention's kernel computes. The result (a frozen
    record) is kept per (setup, length, conventions): the planner times many layouts of one setup.
    """
    return _flops_per_token(setup, seq_len, attention_convention, mfu_convention)


@functools.lru_cache(maxsize=4096)
def _flops_per_token(setup: TrainingSetup, seq_len: int | None, attention_convention: AttnConvention | None,
                     mfu_convention: AttnConvention) -> FlopsPerToken:
    spec = setup.model
    s = seq_len or setup.seq_len
    conv = attention_convention or kernel_convention(
        setup.attention, padded_sdpa(setup.framework, setup.attention, setup.impl.padding_mask))
    st = structure(spec)
    lora_names = lora_target_names(setup)
    rank = setup.lora.rank if setup.lora else 0
    first, trained_span = first_backward_layer(setup), trained_layers(setup)
    full_ft = setup.method is Method.FULL
    # per layer kind: models whose layers alternate local and full attention differ by kind
    attn_kind = [attention_core_flops(spec, s, conv, layer) for layer, _ in st.layers]
    attn_mfu_kind = [attention_core_flops(spec, s, mfu_convention, layer) for layer, _ in st.layers]
    uniform = len(set(attn_kind)) == 1 and len(set(attn_mfu_kind)) == 1
    attn_all = attn_kind[0] * spec.num_layers if uniform else sum(attn_kind[k] for k in st.layer_kinds_in_order)
    attn_mfu_all = (attn_mfu_kind[0] * spec.num_layers if uniform
                    else sum(attn_mfu_kind[k] for k in st.layer_kinds_in_order))

    # each decoder-layer kind's linears and adapters once (and, for op-level selective
    # checkpointing, the matmuls it recomputes); the layers then add up in order
    dora_rerun = reruns_base(setup)
    kinds = [(sum(linear_flops(lin, spec) for lin in layer.linears),
              sum(adapter_flops(lin, spec, rank) for lin in layer.linears if lora_key(lin) in lora_names),
              op_sac_recompute_flops(layer, spec, lora_names, rank),
              sum(linear_flops(lin, spec) for lin in layer.linears if lora_key(lin) in lora_names)
              if dora_rerun else 0.0)
             for layer, _ in st.layers]
    lin_fwd = lin_in = lin_w = ad_fwd = ad_bwd = att_bwd = recompute = att_recompute = 0.0
    for i, kind in enumerate(st.layer_kinds_in_order):
        base, adapters, op_recompute, dora_base = kinds[kind]
        attn = attn_kind[kind]
        lin_fwd += base
        ad_fwd += adapters + dora_base
        if i < first:
            continue                      # frozen and below every trained layer: no backward
        trained = i in trained_span
        lin_in += base
        lin_w += base if trained else 0.0
        ad_bwd += 2.0 * adapters + dora_base      # DoRA's rerun base linear: its input gradient only
        att_bwd += 2.0 * attn
        if not setup.layer_checkpointed(i):
            continue
        if setup.grad_ckpt is GradCkpt.FULL:
            recompute += base + adapters + dora_base + attn
            att_recompute += attn
        elif setup.grad_ckpt is GradCkpt.OP:
            recompute += op_recompute             # the attention kernel's output is saved
        elif setup.grad_ckpt is GradCkpt.SELECTIVE:
            recompute += attn
            att_recompute += attn

    head = lm_head_flops(spec)
    # LoRA/QLoRA/freeze keep the head frozen (input gradient only), unless peft trains a copy of it
    # (modules_to_save: its weight gradient too)
    head_trained = full_ft or "lm_head" in setup.saved_modules
    return FlopsPerToken(
        seq_len=s, attention_convention=conv, mfu_convention=mfu_convention,
        linear_fwd=lin_fwd, attention_fwd=attn_all, lm_head_fwd=head,
        adapter_fwd=ad_fwd, linear_bwd_input=lin_in, linear_bwd_weight=lin_w,
        attention_bwd=att_bwd, lm_head_bwd=head * (2.0 if head_trained else 1.0),
        adapter_bwd=ad_bwd, recompute=recompute, recompute_attention=att_recompute,
        reference=(lin_fwd + attn_all + head) if setup.reference_forward else 0.0,
        reference_attention=attn_all if setup.reference_forward else 0.0,
        attention_fwd_mfu=attn_mfu_all)


@frozen
class StepFlops:
    """FLOPs of one optimizer step over `tokens` tokens (all GPUs together)."""

    tokens: int
    per_token: FlopsPerToken

    @property
    def model_flops(self) -> float:
        return self.tokens * self.per_token.model

    @property
    def hardware_flops(self) -> float:
        return self.tokens * self.per_token.hardware

    @property
    def forward_flops(self) -> float:
        return self.tokens * self.per_token.forward


def step_flops(setup: TrainingSetup, *, global_batch: int, seq_len: int | None = None,
               attention_convention: AttnConvention | None = None,
               mfu_convention: AttnConvention = AttnConvention.FULL) -> StepFlops:
    """FLOPs of one step of `global_batch` sequences of `seq_len` tokens (default setup.seq_len)."""
    per = flops_per_token(setup, seq_len=seq_len, attention_convention=attention_convention,
                          mfu_convention=mfu_convention)
    return StepFlops(tokens=global_batch * per.seq_len, per_token=per)
