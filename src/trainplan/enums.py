"""Finite choices as enums. Values are the strings users type on the command line."""

from __future__ import annotations

import enum
from enum import IntEnum, StrEnum


def simple_enum(base: type) -> object:
    """`@simple_enum(StrEnum) class X:` builds the enum `class X(StrEnum):` builds, in half the import
    time (the 18 here: 0.84 -> 0.48 ms of a one-shot estimate): the standard library's builder of its
    own enums (enum._simple_enum: re.RegexFlag, http.HTTPStatus), then each member stored in the class
    dict as the class statement stores it (_simple_enum leaves a descriptor there, whose lookup is 3x
    slower: 140 ns a `Method.FULL`, tens of thousands in a plan). tests/test_enums.py compares every
    such enum with its class-statement twin (enum._test_simple_enum and the class dicts)."""
    simple = getattr(enum, "_simple_enum", None)

    def build(cls: type) -> type:
        if simple is None:   # pragma: no cover - a Python without it: the class statement's machinery
            body = type(base).__prepare__(cls.__name__, (base,))
            for key, value in cls.__dict__.items():
                if key not in ("__dict__", "__weakref__"):
                    body[key] = value
            return type(base)(cls.__name__, (base,), body)
        made = simple(base)(cls)
        for name, member in made._member_map_.items():
            if type(made.__dict__.get(name)) is enum.property and not any(name in b.__dict__ for b in made.__mro__[1:]):
                type.__setattr__(made, name, member)
        return made
    return build


@simple_enum(StrEnum)
class Method:
    FULL = "full"
    LORA = "lora"
    QLORA = "qlora"
    FREEZE = "freeze"


@simple_enum(StrEnum)
class Precision:
    """Precision regime (see PRODUCT.md).

    BF16/FP16: mixed precision with fp32 master weights. How the fp32 copy is held depends on the
    framework: HF Trainer keeps the model itself in fp32 and runs under autocast; DeepSpeed and
    Megatron keep 16-bit weights and an fp32 master copy inside the optimizer.
    BF16_PURE/FP16_PURE: 16-bit weights and 16-bit optimizer states (litgpt bf16-true, torchtune).
    FP8: Transformer-Engine style fp8 matmuls over bf16 weights with fp32 master weights.
    """

    FP32 = "fp32"
    BF16 = "bf16"
    FP16 = "fp16"
    BF16_PURE = "bf16-pure"
    FP16_PURE = "fp16-pure"
    FP8 = "fp8"

    @property
    def is_pure(self) -> bool:
        return self in (Precision.BF16_PURE, Precision.FP16_PURE)

    @property
    def compute_bytes(self) -> int:
        """Bytes of one activation element in the matmuls' dtype (fp8 keeps bf16 activations)."""
        return 4 if self is Precision.FP32 else 2

    @property
    def compute_dtype(self) -> str:
        if self is Precision.FP32:
            return "fp32"
        if self in (Precision.FP16, Precision.FP16_PURE):
            return "fp16"
        return "bf16"

    @property
    def needs_tensor_dtype(self) -> str | None:
        """The dtype a GPU needs tensor cores for to run this precision at speed (GpuSpec.supports):
        bf16 (Ampere and later; Volta and Turing emulate it), fp8 (Ada, Hopper and later); None for
        fp16 and fp32, which every catalog GPU runs."""
        if self is Precision.FP8:
            return "fp8"
        return "bf16" if self in (Precision.BF16, Precision.BF16_PURE) else None


@simple_enum(StrEnum)
class MasterWeights:
    """Where the fp32 copy of the weights lives under mixed precision."""

    AUTOCAST = "autocast"    # model in fp32, autocast casts per op (HF Trainer, FSDP mixed)
    OPTIMIZER = "optimizer"  # 16-bit model, fp32 master copy in the optimizer (DeepSpeed, Megatron)
    NONE = "none"            # pure 16-bit or fp32: no separate copy


@simple_enum(StrEnum)
class Optimizer:
    ADAMW = "adamw"                  # torch.optim.AdamW, foreach implementation (CUDA default)
    ADAMW_FUSED = "adamw-fused"      # torch.optim.AdamW(fused=True)
    ADAMW_8BIT = "adamw-8bit"        # bitsandbytes AdamW8bit
    PAGED_ADAMW_8BIT = "paged-adamw-8bit"
    ADAFACTOR = "adafactor"
    SGD = "sgd"                      # with momentum
    LION = "lion"
    # BAdam BlockOptimizer (layer mode): block-coordinate Adam over one decoder layer at a time, an fp32
    # copy and Adam states of the active layer only (badam 1.4 block_optim.py)
    BADAM = "badam"
    # GaLore (Zhao et al. 2024, arXiv 2403.03507; galore_torch adamw.py / adamw8bit.py): Adam over each
    # decoder linear's gradient projected to rank r (galore_projector.py), full Adam on the other tensors
    GALORE_ADAMW = "galore-adamw"
    GALORE_ADAMW_8BIT = "galore-adamw-8bit"
    # Muon (Jordan et al. 2024; Moonlight, Liu et al. 2025, arXiv 2502.16982): SGD momentum on each 2-D decoder
    # weight, its update orthogonalised by 5 Newton-Schulz iterations in bf16; AdamW on embeddings, head and
    # vectors (Moonlight examples/toy_train.py, which LLaMA-Factory, ms-swift and axolotl run; torch.optim.Muon)
    MUON = "muon"
    # Adam-mini (Zhang et al. 2024, arXiv 2406.16793; pip adam-mini adam_mini.py, LLaMA-Factory use_adam_mini):
    # Adam's first moment per element, its second moment one mean per output neuron (per head for q and k)
    ADAM_MINI = "adam-mini"
    # APOLLO (Zhu et al. 2024, arXiv 2412.05270; apollo_torch APOLLOAdamW): Adam on each decoder linear's gradient
    # projected to rank r by a random (seeded) matrix, only to scale the full gradient channel by channel
    APOLLO_ADAMW = "apollo-adamw"


# the optimizers that project decoder-linear gradients to low rank (GaLore)
GALORE_OPTIMIZERS = frozenset({Optimizer.GALORE_ADAMW, Optimizer.GALORE_ADAMW_8BIT})
# the optimizers that step each 2-D weight as a whole matrix (a projection or an orthogonalisation), so not over
# the flattened shards DeepSpeed ZeRO and FSDP give an optimizer
MATRIX_OPTIMIZERS = GALORE_OPTIMIZERS | {Optimizer.MUON, Optimizer.APOLLO_ADAMW}
# the optimizers that keep Adam states of a low-rank projection of each decoder linear's gradient
LOW_RANK_OPTIMIZERS = GALORE_OPTIMIZERS | {Optimizer.APOLLO_ADAMW}


@simple_enum(StrEnum)
class GradCkpt:
    NONE = "none"
    FULL = "full"             # every layer recomputed from its input (HF gradient_checkpointing)
    SELECTIVE = "selective"   # Megatron selective: the attention core recomputed, the rest saved
    OP = "op"                 # torchtitan selective op-level policy: save matmul outputs but every second


@simple_enum(StrEnum)
class Attention:
    FLASH = "flash"
    SDPA = "sdpa"
    EAGER = "eager"


@simple_enum(StrEnum)
class Loss:
    FULL = "full"        # fp32 upcast of the whole logits tensor (HF default)
    CHUNKED = "chunked"  # chunked cross-entropy (torchtune, litgpt)
    FUSED = "fused"      # fused linear + cross-entropy (Liger, Unsloth, Cut-CE)


@simple_enum(StrEnum)
class ExpertsImpl:
    """How transformers runs the routed experts of one MoE layer (trainplan.timing.hf_moe), by its own names
    (modeling_utils.py get_correct_experts_implementation)."""
    LOOP = "eager"             # a Python loop over the experts hit: transformers 4.x, v5's experts_implementation="eager"
    GROUPED_MM = "grouped_mm"  # v5's default: torch grouped_mm over the 3-D expert weights (integrations/moe.py)


@simple_enum(StrEnum)
class MoeDispatcher:
    """How an MoE layer's tokens reach their experts' ranks (trainplan.timing.dispatch)."""
    ALLTOALL = "alltoall"   # Megatron-Core's alltoall dispatcher: one copy per routed expert
    DEEPEP = "deepep"       # DeepEP: one copy per destination rank, one per destination node across nodes


@simple_enum(StrEnum)
class MoeRouting:
    """Which experts a token is routed to, for the dispatch's copies (trainplan.timing.dispatch)."""
    BALANCED = "balanced"         # balanced in expectation: k experts uniformly among E
    CONSECUTIVE = "consecutive"   # NeMo AutoModel's FakeBalancedGate: experts t k .. t k + k - 1 (mod E)


@simple_enum(StrEnum)
class Fp8Recipe:
    """FP8 training recipes (trainplan.timing.fp8 has what each runs in FP8 and what it costs)."""
    TE_DELAYED = "te-delayed"              # TE DelayedScaling: one scale per tensor from the amax history
    TE_CURRENT = "te-current"              # TE Float8CurrentScaling (Megatron --fp8-recipe tensorwise, "FP8-CS")
    TE_BLOCKWISE = "te-blockwise"          # TE Float8BlockScaling: 1x128 activation, 128x128 weight blocks
    TE_MXFP8 = "te-mxfp8"                  # TE MXFP8BlockScaling: 1x32 blocks, E8M0 scales (Blackwell)
    TORCHAO_TENSORWISE = "torchao-tensorwise"   # torchao Float8Linear, dynamic per-tensor scales
    TORCHAO_ROWWISE = "torchao-rowwise"         # torchao Float8Linear, per-row scales
    TORCHAO_ROWWISE_GW_HP = "torchao-rowwise-gw-hp"   # rowwise, weight-gradient GEMM in bf16


@simple_enum(StrEnum)
class PipeSchedule:
    """Pipeline-parallel schedules (trainplan.timing.pipeline has their bubbles and sources)."""
    GPIPE = "gpipe"                    # all forwards, then all backwards (torchtitan "GPipe")
    ONE_F_ONE_B = "1f1b"               # PipeDream-flush 1F1B (Megatron, DeepSpeed TrainSchedule, torchtitan "1F1B")
    INTERLEAVED = "interleaved-1f1b"   # v model chunks per rank (Megatron --num-layers-per-virtual-pipeline-stage)
    ZB_H1 = "zb-h1"                    # zero bubble, 1F1B memory (Qi et al. 2024 ZB-H1 / ZB1P)
    ZBV = "zbv"                        # zero bubble V-shape, 2 chunks per rank (torchtitan "ZBVZeroBubble")
    DUALPIPE = "dualpipe"              # DeepSeek-V3's bidirectional pipeline: stages i and p-1-i per rank


@simple_enum(StrEnum)
class Quant:
    NF4 = "nf4"
    FP4 = "fp4"
    INT8 = "int8"


@simple_enum(IntEnum)
class ZeroStage:
    NONE = 0
    OPTIMIZER = 1
    GRADIENTS = 2
    PARAMETERS = 3


@simple_enum(StrEnum)
class Fsdp:
    NONE = "none"
    FULL = "full"
    HYBRID = "hybrid"


@simple_enum(StrEnum)
class Offload:
    NONE = "none"
    OPTIMIZER = "optimizer"
    PARAMS = "params"
    ALL = "all"


@simple_enum(StrEnum)
class Framework:
    HF = "hf"
    DEEPSPEED = "deepspeed"
    FSDP = "fsdp"
    MEGATRON = "megatron"
    LITGPT = "litgpt"
    TORCHTUNE = "torchtune"
    LLAMAFACTORY = "llamafactory"
    SWIFT = "swift"
    UNSLOTH = "unsloth"
    AXOLOTL = "axolotl"
    TRL = "trl"
    TORCHTITAN = "torchtitan"
    PYTORCH = "pytorch"     # a plain PyTorch training loop over a Hugging Face model


@simple_enum(StrEnum)
class PriceKind:
    """How a GPU-hour is sold. Rankings compare one kind: an on-demand list price beside a
    marketplace's lowest listing is not a comparison."""

    ON_DEMAND = "on-demand"       # pay as you go, list price
    SPOT = "spot"                 # interruptible / preemptible
    MARKETPLACE = "marketplace"   # hosts' listings (Vast.ai, Chinese rental platforms): median or lowest seen
    RESERVED = "reserved"         # committed: reservations, capacity blocks, monthly rental


@simple_enum(StrEnum)
class MlpKind:
    GATED = "gated"   # gate, up, down (SwiGLU / GeGLU)
    PLAIN = "plain"   # fc -> act -> proj


@simple_enum(StrEnum)
class NormKind:
    RMS = "rmsnorm"
    LAYER = "layernorm"


@simple_enum(StrEnum)
class Position:
    ROPE = "rope"
    LEARNED = "learned"
    ALIBI = "alibi"
