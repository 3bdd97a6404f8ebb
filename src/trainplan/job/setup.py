"""From the options to a TrainingSetup: the model and GPU named (catalog specs), strings -> enums,
defaults from the framework profile, the LoRA/QLoRA, BAdam and preference-stage settings
(job/resolve.py builds the rest of the Job around it)."""

from __future__ import annotations

from enum import Enum

from trainplan import catalog
from trainplan.enums import (
    Attention,
    ExpertsImpl,
    Fp8Recipe,
    Framework,
    GradCkpt,
    Loss,
    MasterWeights,
    Method,
    MoeDispatcher,
    Optimizer,
    Precision,
    Quant,
)
from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.job.frameworks import implementation, profile
from trainplan.job.capabilities import capabilities
from trainplan.job.options import JobOptions
from trainplan.job.training import Implementation, LoraConfig, QuantConfig, TrainingSetup
from trainplan.job.validate import check_model_size, validate_options
from trainplan.model.params import named_targets, saved_modules
from trainplan.specs import GpuSpec, ModelSpec

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any, TypeVar

    E = TypeVar("E", bound=Enum)

def parse_enum(cls: type[E], value: Any, flag: str) -> E:
    if isinstance(value, cls):
        return value
    try:
        return cls(int(value) if issubclass(cls, int) else str(value).lower())
    except (ValueError, TypeError):
        choices = ", ".join(str(m.value) for m in cls)
        raise TrainplanError(f"{flag} {value!r} is not one of: {choices}") from None


def _targets(value: str | tuple[str, ...] | list[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(t.strip() for t in value.split(",") if t.strip())
    return tuple(value)


def resolve_model(model: str | ModelSpec) -> ModelSpec:
    if model is None:
        raise TrainplanError("a model is required (--model, or a --from config that names one)")
    spec = model if isinstance(model, ModelSpec) else catalog.resolve_model(str(model))
    check_model_size(spec)
    return spec


def resolve_gpu(gpu: str | GpuSpec) -> GpuSpec:
    return gpu if isinstance(gpu, GpuSpec) else catalog.resolve_gpu(str(gpu))


# transformers 5 refuses SDPA for these model types (`_supports_sdpa = False` in their
# modeling_<type>.py: gemma2's soft-capped logits, gpt_oss's attention sinks; MptForCausalLM declares no
# SDPA path, its attention is written out with the ALiBi bias): eager it is.
_NO_SDPA = frozenset({"gemma2", "gpt_oss", "mpt"})


def supported_attention(spec: ModelSpec, attention: Attention) -> Attention:
    if attention is Attention.SDPA and spec.model_type in _NO_SDPA:
        return Attention.EAGER
    return attention


def build_setup(req: JobOptions, spec: ModelSpec | None = None, *, validated: bool = False) -> TrainingSetup:
    """The TrainingSetup of `req` (validated first unless the caller just did: resolve_job)."""
    req = req if validated else validate_options(req)
    spec = spec or resolve_model(req.model)
    framework = parse_enum(Framework, req.framework, "--framework")
    prof = profile(framework)
    method = parse_enum(Method, req.method, "--method")
    # a framework that trains a full fine-tune in its load dtype does so on DDP or one GPU; DeepSpeed
    # and FSDP (accelerate's prepare upcasts trainable parameters) add the fp32 copy
    engine = str(req.zero).strip() not in ("0", "") or str(req.fsdp).strip().lower() not in ("none", "")
    default_precision = prof.full_precision if prof.full_precision and method in (Method.FULL, Method.FREEZE) \
        and not engine else prof.precision
    precision = parse_enum(Precision, req.precision, "--precision") if req.precision else default_precision
    optimizer = parse_enum(Optimizer, req.optimizer, "--optimizer") if req.optimizer else prof.optimizer
    grad_ckpt = parse_enum(GradCkpt, req.grad_ckpt, "--grad-ckpt") if req.grad_ckpt else prof.grad_ckpt
    attention = parse_enum(Attention, req.attention, "--attention") if req.attention else prof.attention
    if req.flash_version is not None and req.attention is None:
        attention = Attention.FLASH      # naming a FlashAttention version asks for it (job.validate._flash_version)
    attention = supported_attention(spec, attention)
    loss = parse_enum(Loss, req.loss, "--loss") if req.loss else None
    if req.fp8_recipe is not None and precision is not Precision.FP8:
        raise TrainplanError(f"--fp8-recipe {req.fp8_recipe} is an FP8 recipe: it needs --precision fp8")
    impl = implementation(framework, loss=loss, optimizer_in_backward=req.optimizer_in_backward,
                          activation_offload=req.activation_offload, liger_kernels=req.liger,
                          load_fp32=req.load_fp32, compiled=req.compile, loss_compiled=req.compile_loss,
                          padding_free=req.padding_free,
                          padding_mask=req.padding_mask, launch_blocking=req.launch_blocking,
                          loss_upcast=req.loss_upcast,
                          comm_overlap=req.comm_overlap, moe_a2a_overlap=req.moe_a2a_overlap,
                          moe_dispatcher=None if req.moe_dispatcher is None else
                          parse_enum(MoeDispatcher, req.moe_dispatcher, "--moe-dispatcher"),
                          cpu_threads_per_rank=req.cpu_threads_per_rank, flash_version=req.flash_version,
                          experts_impl=None if req.experts_implementation is None else
                          parse_enum(ExpertsImpl, req.experts_implementation, "--experts-implementation"),
                          fp8_recipe=None if req.fp8_recipe is None else
                          parse_enum(Fp8Recipe, req.fp8_recipe, "--fp8-recipe"))
    lora = quant = None
    if method in (Method.LORA, Method.QLORA):
        alpha = req.lora_alpha if req.lora_alpha is not None else 2.0 * req.lora_rank
        lora = LoraConfig(rank=req.lora_rank, alpha=alpha, dropout=req.lora_dropout,
                          targets=named_targets(spec, _targets(req.lora_targets)), dora=req.dora,
                          modules_to_save=saved_modules(req.modules_to_save))
    elif saved_modules(req.modules_to_save):
        raise TrainplanError("--modules-to-save trains copies of modules beside LoRA adapters: it needs "
                             "--method lora or qlora (a full fine-tune trains them already)")
    if method is Method.QLORA:
        if not capabilities(framework).quantized_base:
            raise TrainplanError(capabilities(framework).cannot_run(
                framework, "a 4-bit quantized base (--method qlora)") + "; use --method lora (16-bit weights)")
        kind = parse_enum(Quant, req.quant or "nf4", "--quant")
        quant = QuantConfig(kind=kind, double_quant=req.double_quant)
    elif req.quant:
        raise TrainplanError("--quant applies to --method qlora only")
    if precision is Precision.FP32 and method is Method.QLORA:
        raise TrainplanError("QLoRA with --precision fp32 is not a thing: 4-bit weights compute in "
                             "bf16/fp16; use --precision bf16")
    pairs, reference, ref_forward = preference(req.stage, req.ref_model, method)
    freeze, bottom = _freeze_layers(req.freeze_layers)
    if optimizer is Optimizer.BADAM:
        method, freeze, bottom, precision, impl = block_coordinate(method, precision, impl)
    every = req.grad_ckpt_every or 1
    if isinstance(every, bool) or not isinstance(every, int) or every < 1:
        raise TrainplanError(f"--grad-ckpt-every must be a positive integer, got {req.grad_ckpt_every!r}")
    return TrainingSetup(model=spec, method=method, precision=precision, optimizer=optimizer,
                         batch_size=req.batch_size, seq_len=req.seq_len, grad_accum=req.grad_accum,
                         grad_ckpt=grad_ckpt, grad_ckpt_every=every, attention=attention, lora=lora, quant=quant,
                         freeze_trainable_layers=freeze, freeze_bottom=bottom, framework=framework, impl=impl,
                         sequences_per_sample=pairs, reference_model=reference, reference_forward=ref_forward,
                         galore_rank=req.galore_rank, apollo_rank=req.apollo_rank)


def _freeze_layers(value: object) -> tuple[int, bool]:
    """--freeze-layers N: the last N layers train; -N: the first N (LLaMA-Factory's sign convention)."""
    if isinstance(value, bool) or not isinstance(value, int) or value == 0:
        raise TrainplanError(f"--freeze-layers must be a non-zero integer (-N: the first N layers), got {value!r}")
    return abs(value), value < 0


def block_coordinate(method: Method, precision: Precision,
                     impl: Implementation) -> tuple[Method, int, bool, Precision, Implementation]:
    """BAdam (badam 1.4 block_optim.py, layer mode as LLaMA-Factory's _create_badam_optimizer builds it):
    `infer_param_groups` makes one block per decoder layer (embedding and head in none, so never
    trained); `switch_trainable_params` sets requires_grad on the active block only, clones it to fp32
    (`param.clone().float()`) for the base optimizer and resets the optimizer state. At any step the
    memory is freeze tuning of one layer with an fp32 master copy in the optimizer; the run's peak is the
    bottom block, whose backward runs through every layer. LLaMA-Factory keeps the model in its 16-bit
    load dtype under BAdam (model/adapter.py: "Pure bf16 / BAdam detected")."""
    if method is not Method.FULL:
        raise TrainplanError(f"--optimizer badam trains the whole model a layer at a time: use --method full, "
                             f"not {method}")
    if precision is Precision.FP32:
        return Method.FREEZE, 1, True, precision, impl
    sixteen = {Precision.BF16_PURE: Precision.BF16, Precision.FP16_PURE: Precision.FP16}.get(precision, precision)
    return Method.FREEZE, 1, True, sixteen, replace(impl, master_weights=MasterWeights.OPTIMIZER)


# Training stages: (sequences per sample, reference model by default). Preference pairs run chosen
# and rejected through the model together (TRL DPOTrainer.concatenated_forward, LLaMA-Factory
# CustomDPOTrainer); DPO/IPO/KTO compare with a frozen reference (TRL: `ref_model` None -> a copy of
# the model, or the model with its adapters disabled under PEFT; LLaMA-Factory create_ref_model);
# ORPO, SimPO and CPO are reference-free; a reward model (rm) scores pairs without one.
STAGES = {"sft": (1, False), "pt": (1, False), "dpo": (2, True), "ipo": (2, True), "kto": (1, True),
          "orpo": (2, False), "simpo": (2, False), "cpo": (2, False), "rm": (2, False), "grpo": (1, False)}


def preference(stage_name: str | None, ref_model: bool | None, method: Method) -> tuple[int, bool, bool]:
    """(sequences per sample, a reference copy held on the GPU, a reference forward per micro-batch) of a
    training stage (None: sft); `ref_model` None takes the stage's default."""
    stage = (stage_name or "sft").strip().lower()
    if stage == "ppo":
        raise TrainplanError("--stage ppo is not modelled: PPO holds policy, reference, reward and value models "
                             "and generates rollouts; use dpo, kto, orpo, simpo, rm or grpo")
    if stage not in STAGES:
        raise TrainplanError(f"--stage must be one of {', '.join(STAGES)}, got {stage_name!r}")
    pairs, ref_default = STAGES[stage]
    ref = ref_default if ref_model is None else bool(ref_model)
    adapters = method in (Method.LORA, Method.QLORA)
    return pairs, ref and not adapters, ref
