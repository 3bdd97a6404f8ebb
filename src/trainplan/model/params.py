"""Exact parameter counts by component, total, trainable (full, LoRA, QLoRA, freeze) and active (MoE)."""

from __future__ import annotations

from functools import lru_cache

from trainplan.enums import Method
from trainplan.errors import TrainplanError
from trainplan.frozen import frozen
from trainplan.job.training import TrainingSetup
from trainplan.model.architecture import (
    ATTENTION_SINK_MODEL_TYPES,
    Group,
    LinearSpec,
    Role,
    layer_linears,
    module_names,
    structure,
)
from trainplan.specs import ModelSpec

# peft's default LoRA targets per model family (peft/utils/constants.py,
# TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING).
DEFAULT_LORA_TARGETS: dict[str, tuple[str, ...]] = {
    "llama": ("q_proj", "v_proj"), "mixtral": ("q_proj", "v_proj"), "opt": ("q_proj", "v_proj"),
    "phi3": ("qkv_proj",), "gpt2": ("c_attn",), "neox": ("query_key_value",),
    "chatglm": ("query_key_value",), "glm4": ("q_proj", "v_proj"), "internlm2": ("wqkv",),
    "baichuan": ("W_pack",), "deepseek": ("q_proj", "q_b_proj", "kv_b_proj"),
    "phi": ("q_proj", "v_proj", "fc1", "fc2"), "gptj": ("q_proj", "v_proj"), "gpt_bigcode": ("c_attn",),
    "mpt": ("Wqkv",),
    "qwen": ("c_attn",),   # remote code: peft has no default (it asks for target_modules); the fused q/k/v, as gpt2
}

ALL_LINEAR = "all-linear"

# Role names users may type instead of module names (litgpt calls them query/key/value ...).
_ROLE_ALIASES: dict[str, tuple[Role, ...]] = {
    "query": (Role.Q,), "key": (Role.K,), "value": (Role.V,), "projection": (Role.O,), "proj": (Role.O,),
    # every linear of the MLP: litgpt's lora_mlp adapts fc_1, fc_2 and proj of LLaMAMLP and fc and proj of
    # GptNeoxMLP (litgpt/lora.py), torchtune's apply_lora_to_mlp w1, w2 and w3 (lora_llama3_mlp)
    "mlp": (Role.GATE, Role.UP, Role.GATE_UP, Role.DOWN),
    # Megatron-Core's module names, which NeMo's and Megatron-Bridge's LoRA `target_modules` use (default
    # linear_qkv, linear_proj, linear_fc1, linear_fc2): the fused q/k/v projection, the attention output,
    # the fused gate/up projection and the down projection of a TransformerLayer
    "linear_qkv": (Role.Q, Role.K, Role.V, Role.QKV), "linear_proj": (Role.O,),
    "linear_fc1": (Role.GATE, Role.UP, Role.GATE_UP), "linear_fc2": (Role.DOWN,),
}


@frozen
class ParamCounts:
    """Parameters by component (elements, not bytes)."""

    embeddings: int
    attention: int
    mlp: int
    experts: int
    shared_experts: int
    router: int
    norms: int
    lm_head: int

    @property
    def total(self) -> int:
        return (self.embeddings + self.attention + self.mlp + self.experts + self.shared_experts
                + self.router + self.norms + self.lm_head)

    def as_dict(self) -> dict[str, int]:
        return {"embeddings": self.embeddings, "attention": self.attention, "mlp": self.mlp,
                "experts": self.experts, "shared_experts": self.shared_experts,
                "router": self.router, "norms": self.norms, "lm_head": self.lm_head,
                "total": self.total}


@lru_cache(maxsize=128)
def count_params(spec: ModelSpec) -> ParamCounts:
    """Exact count as the sum of HF module shapes (tied embeddings counted once; cached per spec)."""
    st = structure(spec)
    by_group = {g: 0 for g in Group}
    norms = st.embedding_norm_params + st.final_norm_params
    extra = 0
    for kind, n in st.layers:
        for lin in kind.linears:
            by_group[lin.group] += lin.params * n
        norms += kind.norm_params * n
        extra += kind.extra_params * n
    sinks = spec.num_heads * spec.num_layers if spec.model_type in ATTENTION_SINK_MODEL_TYPES else 0
    extra -= sinks                                  # attention-sink logits are attention parameters
    return ParamCounts(
        embeddings=st.embedding_params + st.position_params,
        attention=by_group[Group.ATTENTION] + sinks,
        mlp=by_group[Group.MLP],
        experts=by_group[Group.EXPERTS],
        shared_experts=by_group[Group.SHARED_EXPERTS],
        router=by_group[Group.ROUTER] + extra,
        norms=norms,
        lm_head=st.lm_head.params if st.lm_head else 0,
    )


def active_params(spec: ModelSpec) -> int:
    """Parameters used per token: routed experts count top_k of num_experts."""
    counts = count_params(spec)
    if not spec.moe:
        return counts.total
    routed = counts.experts * spec.moe.top_k // spec.moe.num_experts
    return counts.total - counts.experts + routed


def default_lora_targets(spec: ModelSpec) -> tuple[str, ...]:
    return DEFAULT_LORA_TARGETS.get(spec.naming, ("q_proj", "v_proj"))


# peft 0.21 on transformers 5 rewrites the LoRA targets of the MoE models whose experts transformers
# 5 fused into 3-D parameters (peft/utils/transformers_weight_conversion.py _convert_peft_config_moe,
# for the model types transformers/conversion_mapping.py _MODEL_TO_CONVERSION_PATTERN maps to the
# qwen2_moe pattern, and mixtral): the transformers 4 names of the experts' projections and of the
# router leave target_modules and become target_parameters (gate_up_proj with rank and alpha
# doubled, down_proj, gate.weight), adapted by ParamWrapper; "all-linear" is first resolved to the
# leaf name of every nn.Linear plus those names. So the routed experts and the router are adapted,
# and no other linear named like them (DeepSeek's and GLM-4.5's dense MLPs and shared experts:
# gate_proj, up_proj, down_proj). Kimi-K2 (remote code) is estimated as transformers' DeepSeek-V3.
PEFT_MOE_CONVERSION_MODEL_TYPES = frozenset({"mixtral", "qwen3_moe", "deepseek_v2", "deepseek_v3", "glm4_moe",
                                             "kimi_k2", "olmoe"})
_V4_MOE_ROLES = (Role.ROUTER, Role.GATE, Role.UP, Role.DOWN)


def _nn_linear(lin: LinearSpec) -> bool:
    """An nn.Linear module in transformers 5: not the fused 3-D experts, not a router module
    (TopKRouter classes hold a bare weight; Qwen2-MoE's shared_expert_gate is an nn.Linear)."""
    return lin.group is not Group.EXPERTS and (lin.group is not Group.ROUTER or lin.role is Role.SHARED_GATE)


def param_wrapped(spec: ModelSpec, lin: LinearSpec) -> bool:
    """Adapted by peft's ParamWrapper (W + B A folded into the weight) rather than lora.Linear."""
    return spec.model_type in PEFT_MOE_CONVERSION_MODEL_TYPES and lin.role in _V4_MOE_ROLES and not _nn_linear(lin)


def _converted_targets(spec: ModelSpec, linears: list[tuple[LinearSpec, int]],
                       targets: tuple[str, ...]) -> list[tuple[LinearSpec, int]]:
    names = module_names(spec.naming)
    v4 = {names[role] for role in _V4_MOE_ROLES if role in names}
    if any(t.lower() in (ALL_LINEAR, "all") for t in targets):
        wanted = {lin.name for lin, _ in linears if _nn_linear(lin)} | v4
    else:
        wanted = set(targets) | {names[role] for t in targets for role in _ROLE_ALIASES.get(t.lower(), ())
                                 if role in names}
    params, modules = wanted & v4, wanted - v4
    gate, up = names.get(Role.GATE), names.get(Role.UP)
    if (gate in params) != (up in params):
        raise TrainplanError(f"LoRA targets of {spec.name}: peft cannot target {gate if gate in params else up} "
                             f"without {up if gate in params else gate}: transformers 5 fuses them into the "
                             f"experts' gate_up_proj")
    return [(lin, n) for lin, n in linears
            if (lin.name in params and not _nn_linear(lin)) or (lin.name in modules and _nn_linear(lin))]


def lora_rank_factor(spec: ModelSpec, lin: LinearSpec) -> int:
    """peft doubles rank (and alpha) of the fused experts' gate_up_proj it targets for gate and up
    (_convert_peft_config_moe rank_pattern): each of gate and up holds r x in of lora_A and
    out x 2r of lora_B."""
    return 2 if param_wrapped(spec, lin) and lin.role in (Role.GATE, Role.UP) else 1


def named_targets(spec: ModelSpec, targets: tuple[str, ...]) -> tuple[str, ...]:
    """`targets` with each role alias (litgpt's query/key/value/projection/mlp) written as the module names it
    reaches in `spec` (resolve_lora_targets), so that a setup names modules peft and the exporters know; other
    names as given, in order. An alias that reaches nothing in this model is left out; where nothing is left, the
    targets stay as given (so that resolve_lora_targets says what the model has, not peft's default)."""
    if not any(t.lower() in _ROLE_ALIASES for t in targets):
        return targets
    out: list[str] = []
    for t in targets:
        names = ([lin.name for lin, _ in _aliased(spec, (t,))] if t.lower() in _ROLE_ALIASES else [t])
        out += [n for n in names if n not in out]
    return tuple(out) or targets


def _aliased(spec: ModelSpec, targets: tuple[str, ...]) -> list[tuple[LinearSpec, int]]:
    try:
        return resolve_lora_targets(spec, targets)
    except TrainplanError:      # nothing of this model answers to the alias
        return []


def resolve_lora_targets(spec: ModelSpec, targets: tuple[str, ...]) -> list[tuple[LinearSpec, int]]:
    """The decoder-layer linears (with layer counts) that a peft target list selects.

    `all-linear` means every nn.Linear except the output head (peft's definition). In transformers 5
    the routed experts of MoE layers are fused 3-D parameters and the routers are not nn.Linear,
    so `all-linear` does not reach them (peft 0.21), except where peft converts the targets
    (PEFT_MOE_CONVERSION_MODEL_TYPES). A name matches the module's last path component (peft
    suffix matching); role aliases are accepted too.
    """
    linears = layer_linears(spec)
    if spec.model_type in PEFT_MOE_CONVERSION_MODEL_TYPES:
        chosen = _converted_targets(spec, linears, targets)
        if chosen:
            return chosen
    if any(t.lower() in (ALL_LINEAR, "all") for t in targets):
        return [(lin, n) for lin, n in linears if _nn_linear(lin)]
    wanted_names = {t for t in targets}
    wanted_roles = {role for t in targets for role in _ROLE_ALIASES.get(t.lower(), ())}
    if wanted_roles & {Role.Q, Role.K, Role.V} and not any(lin.role is Role.Q for lin, _ in linears):
        # a model with one fused q/k/v linear (Falcon's query_key_value, Phi-3's qkv_proj): litgpt's LoRAQKVLinear
        # adapts the slices of it that query/key/value name; the adapter is counted over the whole fused output
        # (exact where all three are named; Falcon-7B's q+v slices are 4,608 of its 4,672 outputs)
        wanted_roles.add(Role.QKV)
    # peft matches module names: the fused experts (parameters of one module) and router modules
    # that are not nn.Linear carry no adapter whatever their transformers 4 names
    chosen = [(lin, n) for lin, n in linears if _nn_linear(lin) and (lin.name in wanted_names or lin.role in wanted_roles)]
    unknown = [t for t in targets if t not in {lin.name for lin, _ in linears}
               and t.lower() not in _ROLE_ALIASES]
    if not chosen:   # peft, too, fails only when no module matches at all
        available = sorted({lin.name for lin, _ in linears} | set(module_names(spec.naming).values()))
        raise TrainplanError(
            f"LoRA target(s) {', '.join(unknown or targets)} not found in {spec.name}; its linear "
            f"modules are: {', '.join(n for n in available if n in {l.name for l, _ in linears})} "
            f"(or all-linear)")
    return chosen


def lora_key(lin: LinearSpec) -> str:
    """A linear's identity for LoRA targets: routed experts share their module names with the
    shared expert's linears (gate_proj, up_proj, down_proj), so the group is part of it."""
    return f"{lin.group.value}/{lin.name}"


def lora_target_keys(setup: TrainingSetup) -> frozenset[str]:
    """lora_key of every linear that carries an adapter (empty unless method is lora/qlora)."""
    if setup.method not in (Method.LORA, Method.QLORA) or setup.lora is None:
        return frozenset()
    targets = setup.lora.targets or default_lora_targets(setup.model)
    return frozenset(lora_key(lin) for lin, _ in resolve_lora_targets(setup.model, targets))


def trained_layers(setup: TrainingSetup) -> range:
    """Decoder layers whose own weights train: all for a full fine-tune, none for adapters; freeze
    tuning trains the last N layers, or the first N (LLaMA-Factory FreezeArguments.freeze_trainable_layers:
    "negative numbers mean the first n layers are set as trainable")."""
    n = setup.model.num_layers
    if setup.method is Method.FULL:
        return range(n)
    if setup.method is Method.FREEZE:
        k = setup.freeze_trainable_layers
        return range(k) if setup.freeze_bottom else range(n - k, n)
    return range(0)


def first_trained_layer(setup: TrainingSetup) -> int:
    """Index of the lowest decoder layer whose own weights train (0 for full fine-tunes and adapters)."""
    return trained_layers(setup).start if setup.method is Method.FREEZE else 0


def lora_params(spec: ModelSpec, targets: tuple[str, ...], rank: int, dora: bool = False) -> int:
    """Trainable LoRA parameters: r x (in + out) per adapted linear (+ out for DoRA's magnitude)."""
    total = 0
    for lin, n in resolve_lora_targets(spec, targets):
        per = rank * (lin.in_features + lin.out_features * lora_rank_factor(spec, lin))
        total += (per + (lin.out_features if dora else 0)) * lin.copies * n
    return total


def freeze_trainable_params(spec: ModelSpec, layers: int, bottom: bool = False) -> int:
    """LLaMA-Factory freeze tuning: every parameter of the last (or first) N decoder layers is trained."""
    st = structure(spec)
    span = range(layers) if bottom else range(spec.num_layers - layers, spec.num_layers)
    return sum(st.layer(i).params for i in span)


# Names of the input embedding and the LM head across the architectures (Hugging Face, GPT-2, BLOOM,
# GPT-NeoX, Qwen-1, ChatGLM, torchtune/litgpt), for peft's modules_to_save (matched by the module name's end)
_SAVED_ROLES = {
    "embed_tokens": ("embed_tokens", "wte", "word_embeddings", "tok_embeddings", "embed_in", "embeddings",
                     "embedding", "embed"),
    "lm_head": ("lm_head", "output", "embed_out", "output_layer", "head"),
}


def saved_role(name: str) -> str | None:
    """The role ("embed_tokens", "lm_head") a peft `modules_to_save` name gives, None for any other module."""
    key = name.strip().lower().rsplit(".", 1)[-1]
    return next((r for r, spellings in _SAVED_ROLES.items() if key in spellings), None)


def saved_modules(names: str | tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    """peft `modules_to_save` names as the roles trainplan models ("embed_tokens", "lm_head"), in that order;
    TrainplanError for any other module (a classification head, a norm: not modelled)."""
    if not names:
        return ()
    items = [n.strip() for n in (names.split(",") if isinstance(names, str) else names) if n.strip()]
    roles = set()
    for name in items:
        role = saved_role(name)
        if role is None:
            raise TrainplanError(f"--modules-to-save {name!r}: trainplan models trained copies of the input "
                                 f"embedding and the LM head only ({', '.join(_SAVED_ROLES['embed_tokens'][:3])}, "
                                 "lm_head, ...)")
        roles.add(role)
    return tuple(r for r in _SAVED_ROLES if r in roles)


def saved_copy_params(spec: ModelSpec, roles: tuple[str, ...]) -> dict[str, int]:
    """Parameters of each fully trained copy peft's ModulesToSaveWrapper adds (peft/utils/other.py: a deep
    copy of the module, trained, beside the frozen original): the word embedding (vocab x hidden) and the
    LM head (vocab x hidden, also when tied to the embedding: the copy is a module of its own)."""
    st = structure(spec)
    sizes = {"embed_tokens": st.embedding_params, "lm_head": st.lm_head.params if st.lm_head else st.embedding_params}
    return {role: sizes[role] for role in roles}


def trainable_params(spec: ModelSpec, method: Method, *, lora_targets: tuple[str, ...] = (),
                     lora_rank: int = 0, dora: bool = False, freeze_layers: int = 0,
                     freeze_bottom: bool = False, modules_to_save: tuple[str, ...] = ()) -> int:
    if method is Method.FULL:
        return count_params(spec).total
    if method in (Method.LORA, Method.QLORA):
        return (lora_params(spec, lora_targets or default_lora_targets(spec), lora_rank, dora)
                + sum(saved_copy_params(spec, modules_to_save).values()))
    if method is Method.FREEZE:
        return freeze_trainable_params(spec, freeze_layers, freeze_bottom)
    raise TrainplanError(f"unknown method {method!r}")
