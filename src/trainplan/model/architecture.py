"""The structure of a model as Hugging Face builds it: the linear layers of each decoder layer
(with the module names that LoRA target lists use), norms, embeddings and head.

This inventory is the single source for parameter counts, LoRA/QLoRA, FLOPs and tensor
parallelism. Module names follow the `modeling_*.py` files of transformers (and the remote code
of ChatGLM, InternLM2 and Baichuan).
"""

from __future__ import annotations

from enum import StrEnum
from functools import lru_cache

from trainplan.enums import MlpKind, NormKind, Position, simple_enum
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen, replace
from trainplan.specs import ModelSpec


@simple_enum(StrEnum)
class Role:
    Q = "q"
    K = "k"
    V = "v"
    QKV = "qkv"
    O = "o"
    GATE = "gate"
    UP = "up"
    GATE_UP = "gate_up"
    DOWN = "down"
    ROUTER = "router"
    SHARED_GATE = "shared_gate"
    Q_A = "q_a"
    Q_B = "q_b"
    KV_A = "kv_a"
    KV_B = "kv_b"


@simple_enum(StrEnum)
class Group:
    ATTENTION = "attention"
    MLP = "mlp"
    EXPERTS = "experts"
    SHARED_EXPERTS = "shared_experts"
    ROUTER = "router"


@frozen
class LinearSpec:
    """One nn.Linear (or `copies` identical ones, as the experts of an MoE layer)."""

    name: str
    role: Role
    group: Group
    in_features: int
    out_features: int
    bias: bool = False
    copies: int = 1

    @property
    def weight_params(self) -> int:
        return self.copies * self.in_features * self.out_features

    @property
    def bias_params(self) -> int:
        return self.copies * self.out_features if self.bias else 0

    @property
    def params(self) -> int:
        return self.weight_params + self.bias_params


@frozen
class LayerSpec:
    """One decoder layer kind; a model has one or two kinds (dense and MoE layers)."""

    linears: tuple[LinearSpec, ...]
    norm_params: int            # layer norms, QK norms, MLA latent norms
    extra_params: int = 0       # e.g. DeepSeek-V3 router bias
    is_moe: bool = False
    mlp_intermediate: int = 0   # dense MLP width (0 for MoE layers)
    # "" : every layer attends as the spec says (spec.sliding_window, if any, on all layers);
    # "local" / "full": models whose layers differ (LOCAL_ATTENTION_MODEL_TYPES) get one kind per
    # attention type: windowed or chunked attention (Llama 4: the RoPE layers) / full causal attention
    attention: str = ""

    @property
    def linear_params(self) -> int:
        return sum(lin.params for lin in self.linears)

    @property
    def params(self) -> int:
        return self.linear_params + self.norm_params + self.extra_params


@frozen
class ModelStructure:
    embedding_params: int
    position_params: int
    embedding_norm_params: int
    layers: tuple[tuple[LayerSpec, int], ...]   # (kind, how many layers of that kind)
    layer_kinds_in_order: tuple[int, ...]       # index into `layers` for each decoder layer
    final_norm_params: int
    lm_head: LinearSpec | None                  # None when tied to the embedding

    def layer(self, index: int) -> LayerSpec:
        return self.layers[self.layer_kinds_in_order[index]][0]

    @property
    def kind_runs(self) -> tuple[tuple[int, int, int], ...]:
        """(first, end, kind) runs of consecutive decoder layers of one kind (one run for a uniform model)."""
        return kind_runs(self.layer_kinds_in_order)


@lru_cache(maxsize=256)
def kind_runs(kinds: tuple[int, ...]) -> tuple[tuple[int, int, int], ...]:
    """(first, end, kind) runs of equal consecutive entries of `kinds`."""
    cuts = [0] + [i for i in range(1, len(kinds)) if kinds[i] != kinds[i - 1]] + [len(kinds)]
    return tuple((lo, hi, kinds[lo]) for lo, hi in zip(cuts, cuts[1:]) if hi > lo)


# Module names per implementation family: role -> name in the HF module tree.
_NAMES: dict[str, dict[Role, str]] = {
    "llama": {Role.Q: "q_proj", Role.K: "k_proj", Role.V: "v_proj", Role.O: "o_proj",
              Role.GATE: "gate_proj", Role.UP: "up_proj", Role.DOWN: "down_proj",
              Role.ROUTER: "gate", Role.SHARED_GATE: "shared_expert_gate"},
    "mixtral": {Role.Q: "q_proj", Role.K: "k_proj", Role.V: "v_proj", Role.O: "o_proj",
                Role.GATE: "w1", Role.UP: "w3", Role.DOWN: "w2", Role.ROUTER: "gate"},
    "phi3": {Role.QKV: "qkv_proj", Role.O: "o_proj", Role.GATE_UP: "gate_up_proj",
             Role.DOWN: "down_proj"},
    "gpt2": {Role.QKV: "c_attn", Role.O: "c_proj", Role.UP: "c_fc", Role.DOWN: "c_proj"},
    "opt": {Role.Q: "q_proj", Role.K: "k_proj", Role.V: "v_proj", Role.O: "out_proj",
            Role.UP: "fc1", Role.DOWN: "fc2"},
    "neox": {Role.QKV: "query_key_value", Role.O: "dense", Role.UP: "dense_h_to_4h",
             Role.DOWN: "dense_4h_to_h"},
    "chatglm": {Role.QKV: "query_key_value", Role.O: "dense", Role.GATE_UP: "dense_h_to_4h",
                Role.DOWN: "dense_4h_to_h"},
    "glm4": {Role.Q: "q_proj", Role.K: "k_proj", Role.V: "v_proj", Role.O: "o_proj",
             Role.GATE_UP: "gate_up_proj", Role.DOWN: "down_proj"},
    "internlm2": {Role.QKV: "wqkv", Role.O: "wo", Role.GATE: "w1", Role.UP: "w3", Role.DOWN: "w2"},
    "baichuan": {Role.QKV: "W_pack", Role.O: "o_proj", Role.GATE: "gate_proj", Role.UP: "up_proj",
                 Role.DOWN: "down_proj"},
    # gpt-oss: experts hold one interleaved gate/up projection; the router module is `mlp.router`
    "gpt_oss": {Role.Q: "q_proj", Role.K: "k_proj", Role.V: "v_proj", Role.O: "o_proj",
                Role.GATE_UP: "gate_up_proj", Role.DOWN: "down_proj", Role.ROUTER: "router"},
    "llama4": {Role.Q: "q_proj", Role.K: "k_proj", Role.V: "v_proj", Role.O: "o_proj",
               Role.GATE: "gate_proj", Role.UP: "up_proj", Role.DOWN: "down_proj",
               Role.ROUTER: "router"},
    # Qwen (1st generation, remote code modeling_qwen.py): fused c_attn; QWenMLP computes
    # c_proj(w1(x) * silu(w2(x))), so w2 is the gate and w1 the up projection
    "qwen": {Role.QKV: "c_attn", Role.O: "c_proj", Role.GATE: "w2", Role.UP: "w1", Role.DOWN: "c_proj"},
    "phi": {Role.Q: "q_proj", Role.K: "k_proj", Role.V: "v_proj", Role.O: "dense", Role.UP: "fc1",
            Role.DOWN: "fc2"},
    "gptj": {Role.Q: "q_proj", Role.K: "k_proj", Role.V: "v_proj", Role.O: "out_proj", Role.UP: "fc_in",
             Role.DOWN: "fc_out"},
    # GPT-2's module names; a naming of its own as its eager softmax runs in fp32 (memory/attention.py)
    "gpt_bigcode": {Role.QKV: "c_attn", Role.O: "c_proj", Role.UP: "c_fc", Role.DOWN: "c_proj"},
    "starcoder2": {Role.Q: "q_proj", Role.K: "k_proj", Role.V: "v_proj", Role.O: "o_proj", Role.UP: "c_fc",
                   Role.DOWN: "c_proj"},
    "mpt": {Role.QKV: "Wqkv", Role.O: "out_proj", Role.UP: "up_proj", Role.DOWN: "down_proj"},
    "deepseek": {Role.Q: "q_proj", Role.Q_A: "q_a_proj", Role.Q_B: "q_b_proj",
                 Role.KV_A: "kv_a_proj_with_mqa", Role.KV_B: "kv_b_proj", Role.O: "o_proj",
                 Role.GATE: "gate_proj", Role.UP: "up_proj", Role.DOWN: "down_proj",
                 Role.ROUTER: "gate"},
}


def module_names(naming: str) -> dict[Role, str]:
    try:
        return _NAMES[naming]
    except KeyError:
        raise TrainplanError(f"unknown module naming {naming!r}; known: {', '.join(_NAMES)}") from None


# LayerNorms with a weight and no bias (CohereLayerNorm; MPT: modeling_mpt.py sets norm_1/norm_2/norm_f.bias = None)
BIASLESS_LAYER_NORM_MODEL_TYPES = frozenset({"cohere", "mpt"})
# LayerNorms with neither (OLMo 1: modeling_olmo.py OlmoLayerNorm, "LayerNorm but with no learnable weight or bias":
# F.layer_norm(x.to(float32), shape, None, None).to(dtype))
PARAMETERLESS_LAYER_NORM_MODEL_TYPES = frozenset({"olmo"})
# lm_head built as nn.Linear with a bias (modeling_phi.py PhiForCausalLM, modeling_gptj.py GPTJForCausalLM)
LM_HEAD_BIAS_MODEL_TYPES = frozenset({"phi", "gptj"})


def _norm_params(spec: ModelSpec, width: int) -> int:
    if spec.model_type in PARAMETERLESS_LAYER_NORM_MODEL_TYPES:
        return 0
    bias = spec.norm_kind is NormKind.LAYER and spec.model_type not in BIASLESS_LAYER_NORM_MODEL_TYPES
    return width * (2 if bias else 1)


def _lin(names: dict[Role, str], role: Role, group: Group, n_in: int, n_out: int,
         bias: bool = False, copies: int = 1) -> LinearSpec:
    return LinearSpec(name=names[role], role=role, group=group, in_features=n_in,
                      out_features=n_out, bias=bias, copies=copies)


def _attention_linears(spec: ModelSpec, names: dict[Role, str]) -> list[LinearSpec]:
    h, at = spec.hidden_size, Group.ATTENTION
    if spec.mla:
        mla = spec.mla
        out: list[LinearSpec] = []
        if mla.q_lora_rank:
            out.append(_lin(names, Role.Q_A, at, h, mla.q_lora_rank, spec.qkv_bias))
            out.append(_lin(names, Role.Q_B, at, mla.q_lora_rank, spec.q_dim))
        else:
            out.append(_lin(names, Role.Q, at, h, spec.q_dim))
        out.append(_lin(names, Role.KV_A, at, h, mla.kv_lora_rank + mla.qk_rope_head_dim, spec.qkv_bias))
        out.append(_lin(names, Role.KV_B, at, mla.kv_lora_rank,
                        spec.num_heads * (mla.qk_nope_head_dim + mla.v_head_dim)))
        out.append(_lin(names, Role.O, at, spec.num_heads * mla.v_head_dim, h, spec.out_bias))
        return out
    q, kv = spec.q_dim, spec.kv_dim
    if Role.QKV in names:
        qkv = [_lin(names, Role.QKV, at, h, q + 2 * kv, spec.qkv_bias)]
    else:
        qkv = [_lin(names, Role.Q, at, h, q, spec.qkv_bias), _lin(names, Role.K, at, h, kv, spec.qkv_bias),
               _lin(names, Role.V, at, h, kv, spec.qkv_bias)]
    return qkv + [_lin(names, Role.O, at, q, h, spec.out_bias)]


def _mlp_linears(spec: ModelSpec, names: dict[Role, str], width: int, group: Group,
                 copies: int = 1) -> list[LinearSpec]:
    h, bias = spec.hidden_size, spec.mlp_bias
    if spec.mlp_kind is MlpKind.PLAIN:
        return [_lin(names, Role.UP, group, h, width, bias, copies),
                _lin(names, Role.DOWN, group, width, h, bias, copies)]
    if Role.GATE_UP in names:
        return [_lin(names, Role.GATE_UP, group, h, 2 * width, bias, copies),
                _lin(names, Role.DOWN, group, width, h, bias, copies)]
    return [_lin(names, Role.GATE, group, h, width, bias, copies),
            _lin(names, Role.UP, group, h, width, bias, copies),
            _lin(names, Role.DOWN, group, width, h, bias, copies)]


# q_norm / k_norm over the whole projection (heads x head_dim), not per head: OLMo 2/3, OLMoE
FULL_WIDTH_QK_NORM_MODEL_TYPES = frozenset({"olmo2", "olmo3", "olmoe"})
# q/k normalised per head with a weight of its own per head (no bias): StableLM's StableLmLayerNormPerHead,
# Cohere's CohereLayerNorm over (heads, head_dim)
PER_HEAD_WEIGHT_QK_NORM_MODEL_TYPES = frozenset({"stablelm", "cohere"})
# q/k normalised without a weight (Llama 4's L2 norm)
WEIGHTLESS_QK_NORM_MODEL_TYPES = frozenset({"llama4", "llama4_text"})
# one learned attention-sink logit per head (gpt-oss `self_attn.sinks`)
ATTENTION_SINK_MODEL_TYPES = frozenset({"gpt_oss"})
# routers that are nn.Linear with a bias (gpt-oss `mlp.router.bias`)
ROUTER_BIAS_MODEL_TYPES = frozenset({"gpt_oss"})


def _qk_norm_params(spec: ModelSpec) -> int:
    if not spec.qk_norm or spec.model_type in WEIGHTLESS_QK_NORM_MODEL_TYPES:
        return 0
    if spec.model_type in FULL_WIDTH_QK_NORM_MODEL_TYPES or spec.model_type in PER_HEAD_WEIGHT_QK_NORM_MODEL_TYPES:
        return spec.q_dim + spec.kv_dim
    return 2 * spec.head_dim                # q_norm and k_norm over head_dim (RMSNorm)


def _layer_norms(spec: ModelSpec) -> int:
    total = spec.norms_per_layer * _norm_params(spec, spec.hidden_size)
    total += _qk_norm_params(spec)
    if spec.mla:
        total += (spec.mla.q_lora_rank or 0) + spec.mla.kv_lora_rank
    return total


def _dense_layer(spec: ModelSpec, names: dict[Role, str]) -> LayerSpec:
    linears = _attention_linears(spec, names) + _mlp_linears(spec, names, spec.intermediate_size, Group.MLP)
    return LayerSpec(linears=tuple(linears), norm_params=_layer_norms(spec), extra_params=_sink_params(spec),
                     mlp_intermediate=spec.intermediate_size)


def _sink_params(spec: ModelSpec) -> int:
    return spec.num_heads if spec.model_type in ATTENTION_SINK_MODEL_TYPES else 0


def _moe_layer(spec: ModelSpec, names: dict[Role, str]) -> LayerSpec:
    moe = spec.moe
    assert moe is not None
    h = spec.hidden_size
    linears = _attention_linears(spec, names)
    linears.append(_lin(names, Role.ROUTER, Group.ROUTER, h, moe.num_experts,
                        spec.model_type in ROUTER_BIAS_MODEL_TYPES))
    linears += _mlp_linears(spec, names, moe.expert_intermediate_size, Group.EXPERTS, moe.num_experts)
    if moe.shared_intermediate_size:
        linears += _mlp_linears(spec, names, moe.shared_intermediate_size, Group.SHARED_EXPERTS)
    if moe.shared_expert_gate:
        linears.append(_lin(names, Role.SHARED_GATE, Group.ROUTER, h, 1))
    extra = (moe.num_experts if moe.router_bias else 0) + _sink_params(spec)
    return LayerSpec(linears=tuple(linears), norm_params=_layer_norms(spec), extra_params=extra,
                     is_moe=True)


# Models whose decoder layers alternate local (sliding-window / chunked) and full attention, with
# saved tensors that differ between the two: one layer kind per attention type (LayerSpec.attention).
# Gemma 2 and 3 (Gemma2Config / Gemma3TextConfig layer_types: every 2nd / every
# sliding_window_pattern-th layer full attention) build a sliding-window mask for the others.
LOCAL_ATTENTION_MODEL_TYPES = frozenset({"olmo3", "gpt_oss", "llama4", "llama4_text", "gemma2", "gemma3_text",
                                         "gemma3"})


@lru_cache(maxsize=128)
def _local_flags(config_json: str, model_type: str, num_layers: int) -> tuple[bool, ...]:
    """Per decoder layer: local attention? From config.json's layer_types (Llama 4: no_rope_layers,
    1 = RoPE = chunked attention), else the config class's default pattern."""
    import json

    config = json.loads(config_json) if config_json else {}
    if model_type in ("llama4", "gemma3"):
        config = config.get("text_config") or {}
    if model_type.startswith("llama4"):
        flags = config.get("no_rope_layers")
        if isinstance(flags, list) and len(flags) == num_layers:
            return tuple(bool(f) for f in flags)
        interval = config.get("no_rope_layer_interval") or 4
        return tuple((i + 1) % interval != 0 for i in range(num_layers))
    layer_types = config.get("layer_types")
    if isinstance(layer_types, list) and len(layer_types) == num_layers:
        return tuple(t == "sliding_attention" for t in layer_types)
    # GptOssConfig / Gemma2Config / Gemma3TextConfig (sliding_window_pattern) / Olmo3Config defaults
    every = {"gpt_oss": 2, "gemma2": 2}.get(model_type) or (
        (config.get("sliding_window_pattern") or 6) if model_type.startswith("gemma3") else 4)
    return tuple((i + 1) % every != 0 for i in range(num_layers))


def local_attention_layers(spec: ModelSpec) -> tuple[bool, ...] | None:
    """Which layers use local attention, for LOCAL_ATTENTION_MODEL_TYPES (None for the others)."""
    if spec.model_type not in LOCAL_ATTENTION_MODEL_TYPES:
        return None
    return _local_flags(spec.hf_config_json, spec.model_type, spec.num_layers)


@lru_cache(maxsize=512)
def moe_layer_count(spec: ModelSpec) -> int:
    """Decoder layers of `spec` whose MLP is routed experts (0 for a dense model)."""
    return 0 if spec.moe is None else sum(1 for i in range(spec.num_layers) if spec.moe.is_moe_layer(i))


@lru_cache(maxsize=512)
def structure(spec: ModelSpec) -> ModelStructure:
    """The module inventory of `spec` as transformers builds it (cached per spec: a pure function of it)."""
    names = module_names(spec.naming)
    h = spec.hidden_size
    kinds: list[LayerSpec] = [_dense_layer(spec, names)]
    order = [0] * spec.num_layers
    if spec.moe:
        kinds.append(_moe_layer(spec, names))
        order = [1 if spec.moe.is_moe_layer(i) else 0 for i in range(spec.num_layers)]
    local = local_attention_layers(spec)
    if local is not None:   # (kind, attention type) -> a kind of its own
        split: dict[tuple[int, bool], int] = {}
        variants: list[LayerSpec] = []
        new_order = []
        for i, k in enumerate(order):
            key = (k, local[i])
            if key not in split:
                split[key] = len(variants)
                variants.append(replace(kinds[k], attention="local" if local[i] else "full"))
            new_order.append(split[key])
        kinds, order = variants, new_order
    counts = [order.count(k) for k in range(len(kinds))]
    layers = tuple((kind, n) for kind, n in zip(kinds, counts))
    position = 0
    if spec.position is Position.LEARNED:
        position = (spec.max_position_embeddings or 0) + spec.learned_position_offset
        position *= h
    lm_head = None if spec.tied_embeddings else LinearSpec(
        name="lm_head", role=Role.O, group=Group.ATTENTION, in_features=h, out_features=spec.vocab_size,
        bias=spec.model_type in LM_HEAD_BIAS_MODEL_TYPES)
    return ModelStructure(
        embedding_params=spec.vocab_size * h,
        position_params=position,
        embedding_norm_params=_norm_params(spec, h) if spec.embedding_norm else 0,
        layers=layers,
        layer_kinds_in_order=tuple(order),
        final_norm_params=_norm_params(spec, h),
        lm_head=lm_head,
    )


def layer_linears(spec: ModelSpec) -> list[tuple[LinearSpec, int]]:
    """Every decoder-layer linear with the number of layers it appears in."""
    return [(lin, n) for kind, n in structure(spec).layers for lin in kind.linears]
