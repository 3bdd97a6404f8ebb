"""Catalog specs: what a model, a GPU and a price offer are. Frozen, keyword-only, validated."""

from __future__ import annotations

from trainplan.enums import MlpKind, NormKind, Position, PriceKind
from trainplan.errors import TrainplanError
from trainplan.frozen import field, frozen


def _positive(owner: str, **values: int | float | None) -> None:
    for key, value in values.items():
        if value is None or value <= 0:
            raise TrainplanError(f"{owner}: {key} must be a positive number, got {value!r}")


@frozen
class MoeSpec:
    """Mixture-of-experts MLP (Mixtral, Qwen-MoE, DeepSeek)."""

    num_experts: int
    top_k: int
    expert_intermediate_size: int
    num_shared_experts: int = 0
    shared_intermediate_size: int = 0   # total width of the shared expert MLP (0 if none)
    shared_expert_gate: bool = False    # Qwen2-MoE: sigmoid gate H -> 1 on the shared expert
    first_dense_layers: int = 0         # DeepSeek first_k_dense_replace
    layer_freq: int = 1                 # MoE every n-th layer (Qwen decoder_sparse_step)
    dense_layers: tuple[int, ...] = ()  # Qwen mlp_only_layers
    router_bias: bool = False           # DeepSeek-V3 e_score_correction_bias (E floats per layer)

    def __post_init__(self) -> None:
        _positive("moe", num_experts=self.num_experts, top_k=self.top_k,
                  expert_intermediate_size=self.expert_intermediate_size)
        if self.top_k > self.num_experts:
            raise TrainplanError(f"moe: top_k {self.top_k} > num_experts {self.num_experts}")

    def is_moe_layer(self, index: int) -> bool:
        if index < self.first_dense_layers or index in self.dense_layers:
            return False
        return (index + 1) % self.layer_freq == 0


@frozen
class MlaSpec:
    """DeepSeek multi-head latent attention."""

    q_lora_rank: int | None
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    @property
    def qk_head_dim(self) -> int:
        return self.qk_nope_head_dim + self.qk_rope_head_dim


@frozen
class ModelSpec:
    """A decoder-only transformer, in Hugging Face config terms, with structure stated explicitly.

    `naming` selects the module names the HF implementation uses (q_proj vs query_key_value ...),
    which LoRA target lists refer to.
    """

    name: str
    model_type: str
    naming: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tied_embeddings: bool
    mlp_kind: MlpKind = MlpKind.GATED
    hidden_act: str = "silu"
    norm_kind: NormKind = NormKind.RMS
    norms_per_layer: int = 2
    qk_norm: bool = False
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    position: Position = Position.ROPE
    max_position_embeddings: int | None = None
    learned_position_offset: int = 0       # OPT stores max_position + 2 rows
    embedding_norm: bool = False           # BLOOM word_embeddings_layernorm
    parallel_attn_mlp: bool = False
    sliding_window: int | None = None
    hidden_dropout: float = 0.0            # residual-branch dropout (GPT-2 resid_pdrop, OPT dropout)
    attention_dropout: float = 0.0
    embedding_dropout: float = 0.0         # GPT-2 embd_pdrop
    attn_logit_softcapping: float | None = None   # Gemma-2: tanh soft-capping of attention scores
    final_logit_softcapping: float | None = None  # Gemma-2: tanh soft-capping of the logits
    moe: MoeSpec | None = None
    mla: MlaSpec | None = None
    hf_id: str | None = None
    aliases: tuple[str, ...] = ()
    source: str = ""
    measured_params: int | None = None     # exact published count, for tests
    hf_config_json: str = ""               # the HF config.json it was read from (for trace/probe)
    notes: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        _positive(self.name, hidden_size=self.hidden_size, num_layers=self.num_layers,
                  num_heads=self.num_heads, num_kv_heads=self.num_kv_heads,
                  head_dim=self.head_dim, intermediate_size=self.intermediate_size,
                  vocab_size=self.vocab_size)
        if self.num_heads % self.num_kv_heads:
            raise TrainplanError(
                f"{self.name}: num_attention_heads {self.num_heads} is not a multiple of "
                f"num_key_value_heads {self.num_kv_heads}")
        if self.position is Position.LEARNED and not self.max_position_embeddings:
            raise TrainplanError(f"{self.name}: learned position embeddings need max_position_embeddings")

    @property
    def q_dim(self) -> int:
        """Width of the query projection output."""
        if self.mla:
            return self.num_heads * self.mla.qk_head_dim
        return self.num_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        """Width of one of the K or V projection outputs (per token)."""
        return self.num_kv_heads * self.head_dim

    @property
    def is_moe(self) -> bool:
        return self.moe is not None


@frozen
class GpuSpec:
    """An accelerator. FLOP/s are dense peaks (no 2:4 sparsity)."""

    id: str
    name: str
    vendor: str
    memory_bytes: int                    # vendor label (decimal GB) in bytes
    reported_memory_bytes: int | None    # what the driver reports as total, where known
    memory_bw_bytes_per_s: float | None
    peak_flops_per_s: dict[str, float]   # dtype -> dense FLOP/s ("fp32","tf32","bf16","fp16","fp8")
    interconnect: str = ""
    gpu_gpu_bw_bytes_per_s: float | None = None   # bidirectional per GPU
    pcie: str = ""
    tdp_w: float | None = None
    launch_year: int | None = None
    generation: str = ""
    aliases: tuple[str, ...] = ()
    confidence: str = ""
    source: str = ""
    notes: str = ""
    memory_type: str = ""                # "HBM3", "HBM2e", "GDDR6X" ... as the catalog states it
    nvlink_domain_gpus: int = 0          # GPUs on one NVLink fabric beyond a host (NVL72: 72); 0 = the host
    form_factor: str = ""                # "SXM5", "PCIe", "PCIe consumer", "OAM" ... as the catalog states it

    @property
    def capacity_bytes(self) -> int:
        """Total device memory as the driver reports it; the catalog derives 0.99 x label GiB where no
        report is known (data/gpus.toml [capacity_basis])."""
        if self.reported_memory_bytes:
            return self.reported_memory_bytes
        return self.memory_bytes

    def peak_flops(self, dtype: str) -> float | None:
        return self.peak_flops_per_s.get(dtype)

    def supports(self, dtype: str) -> bool:
        """Whether the GPU has tensor-core (dense matmul) support for `dtype` ('bf16', 'fp8', ...):
        the catalog lists a dense peak for it (gpus.toml peak_tflops: none for bf16 on Volta and
        Turing, none for fp8 before Ada/Hopper)."""
        return bool(self.peak_flops_per_s.get(dtype))


@frozen
class PriceOffer:
    """One rental price: provider, instance, pricing model, currency, date and source."""

    provider: str
    gpu_id: str
    gpus_per_instance: int
    price_per_gpu_hour: float
    currency: str
    pricing: str          # the source's pricing model, normalised: on-demand, spot, capacity-block, ...
    as_of: str            # date as the source gives it (ISO where known)
    source: str
    instance: str = ""
    region: str = ""
    notes: str = ""
    kind: PriceKind = PriceKind.ON_DEMAND   # what rankings compare
    origin: str = "catalog"                 # where trainplan read it: catalog, a price file, --price

    def __post_init__(self) -> None:
        if not isinstance(self.kind, PriceKind):
            object.__setattr__(self, "kind", PriceKind(self.kind))

    @property
    def is_spot(self) -> bool:
        return self.kind is PriceKind.SPOT


@frozen
class CurrencySpec:
    """A currency the rate table knows: ISO code, the names users type for it, its rental market."""

    code: str
    name: str = ""
    aliases: tuple[str, ...] = ()
    market: str = "global"     # "cn": prices in it are China's market (suggestions keep to GPUs sold there)


@frozen
class Rate:
    """An exchange rate: units of `currency` per 1 US dollar on `as_of`, and where it was read."""

    currency: str
    per_usd: float
    as_of: str
    source: str
    basis: str = ""            # which rate: a central parity, a monthly average, a cross rate ...
    origin: str = "catalog"    # catalog, or the price file that set it

    def __post_init__(self) -> None:
        value = self.per_usd
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or value == float("inf"):
            raise TrainplanError(f"exchange rate for {self.currency} must be a positive number of {self.currency} "
                                 f"per USD, got {value!r}")


def model_spec_from_dict(data: dict) -> ModelSpec:
    """A ModelSpec from its asdict() form after a JSON round trip (lists back to tuples, enums and
    the nested MoE / MLA specs rebuilt); catalog/store.py keeps catalog models in this form."""
    values = dict(data)
    values["mlp_kind"] = MlpKind(values["mlp_kind"])
    values["norm_kind"] = NormKind(values["norm_kind"])
    values["position"] = Position(values["position"])
    values["aliases"] = tuple(values.get("aliases", ()))
    values["notes"] = tuple(values.get("notes", ()))
    if values.get("moe") is not None:
        moe = dict(values["moe"])
        moe["dense_layers"] = tuple(moe.get("dense_layers", ()))
        values["moe"] = MoeSpec(**moe)
    if values.get("mla") is not None:
        values["mla"] = MlaSpec(**values["mla"])
    return ModelSpec(**values)
