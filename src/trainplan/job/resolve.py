"""From what the user said (JobOptions) to a Job: names -> catalog specs, strings -> enums, defaults
from the framework profile, files read, the price chosen, the calibration loaded. All of a job's
I/O happens here; the estimate that follows is pure."""

from __future__ import annotations

import math
from enum import Enum

from trainplan import catalog
from trainplan.cost.prices import NoPriceError, PriceBook, Pricing, resolve_pricing
from trainplan.cost.sources import market_gpus, options_book
from trainplan.enums import (
    Attention,
    Fp8Recipe,
    Framework,
    Fsdp,
    GradCkpt,
    Loss,
    MasterWeights,
    Method,
    Offload,
    Optimizer,
    PipeSchedule,
    Precision,
    Quant,
    ZeroStage,
)
from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.job.frameworks import RUNS_TRANSFORMERS, capabilities, default_expert_tp, implementation, profile
from trainplan.job.job import Job, check_headroom
from trainplan.job.options import JobOptions
from trainplan.job.training import (
    Implementation,
    Layout,
    LoraConfig,
    QuantConfig,
    TrainingSetup,
    Workload,
)
from trainplan.job.validate import check_job, check_model_size, validate_options
from trainplan.ledger.calibration import load_active
from trainplan.ledger.recorded import recorded_runs
from trainplan.memory.parallel import ParallelConfig
from trainplan.memory.sharding import FsdpConfig, ZeroConfig, fsdp_for
from trainplan.model.params import saved_modules
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.estimate import TimingOptions
from trainplan.units import date

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any, TypeVar

    from trainplan.catalog.datasets import DatasetStats

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
# modeling_<type>.py: gemma2's soft-capped logits, gpt_oss's attention sinks): eager it is.
_NO_SDPA = frozenset({"gemma2", "gpt_oss"})


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
    attention = supported_attention(spec, attention)
    loss = parse_enum(Loss, req.loss, "--loss") if req.loss else None
    if req.fp8_recipe is not None and precision is not Precision.FP8:
        raise TrainplanError(f"--fp8-recipe {req.fp8_recipe} is an FP8 recipe: it needs --precision fp8")
    impl = implementation(framework, loss=loss, optimizer_in_backward=req.optimizer_in_backward,
                          activation_offload=req.activation_offload, liger_kernels=req.liger,
                          load_fp32=req.load_fp32, compiled=req.compile, loss_compiled=req.compile_loss,
                          padding_free=req.padding_free,
                          padding_mask=req.padding_mask, launch_blocking=req.launch_blocking,
                          comm_overlap=req.comm_overlap, moe_a2a_overlap=req.moe_a2a_overlap,
                          cpu_threads_per_rank=req.cpu_threads_per_rank,
                          fp8_recipe=None if req.fp8_recipe is None else
                          parse_enum(Fp8Recipe, req.fp8_recipe, "--fp8-recipe"))
    lora = quant = None
    if method in (Method.LORA, Method.QLORA):
        alpha = req.lora_alpha if req.lora_alpha is not None else 2.0 * req.lora_rank
        lora = LoraConfig(rank=req.lora_rank, alpha=alpha, dropout=req.lora_dropout,
                          targets=_targets(req.lora_targets), dora=req.dora,
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
    pairs, reference, ref_forward = preference(req, method)
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
                         sequences_per_sample=pairs, reference_model=reference, reference_forward=ref_forward)


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


def preference(req: JobOptions, method: Method) -> tuple[int, bool, bool]:
    """(sequences per sample, a reference copy held on the GPU, a reference forward per micro-batch)."""
    stage = (req.stage or "sft").strip().lower()
    if stage == "ppo":
        raise TrainplanError("--stage ppo is not modelled: PPO holds policy, reference, reward and value models "
                             "and generates rollouts; use dpo, kto, orpo, simpo, rm or grpo")
    if stage not in STAGES:
        raise TrainplanError(f"--stage must be one of {', '.join(STAGES)}, got {req.stage!r}")
    pairs, ref_default = STAGES[stage]
    ref = ref_default if req.ref_model is None else bool(req.ref_model)
    adapters = method in (Method.LORA, Method.QLORA)
    return pairs, ref and not adapters, ref


DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")


def _sequential(req: JobOptions) -> bool:
    """device_map auto/balanced/sequential: accelerate places consecutive layers on each GPU."""
    if req.device_map is None:
        return False
    if str(req.device_map).strip().lower() not in DEVICE_MAPS:
        raise TrainplanError(f"--device-map must be one of {', '.join(DEVICE_MAPS)}, got {req.device_map!r}")
    return True


def build_layout(req: JobOptions, gpu: GpuSpec) -> Layout:
    zero, fsdp = parse_enum(ZeroStage, req.zero, "--zero"), parse_enum(Fsdp, req.fsdp, "--fsdp")
    ulysses = req.ulysses
    if isinstance(ulysses, bool) or not isinstance(ulysses, int) or ulysses < 1:
        raise TrainplanError(f"--ulysses must be a positive integer, got {ulysses!r}")
    if ulysses > 1 and req.cp > 1:
        raise TrainplanError("choose one of --cp (ring context parallelism) and --ulysses (all-to-all over heads)")
    cp = ulysses if ulysses > 1 else req.cp
    pp, tp = req.pp, req.tp
    if _sequential(req) and req.num_gpus > 1:
        if zero is not ZeroStage.NONE or fsdp is not Fsdp.NONE or tp > 1 or pp > 1 or cp > 1 or req.nodes > 1:
            raise TrainplanError("--device-map auto splits one copy of the model over one node's GPUs: it does not "
                                 "combine with --zero, --fsdp, --tp, --pp, --cp or several nodes")
        pp = req.num_gpus
    etp = req.etp if req.etp is not None else default_expert_tp(
        parse_enum(Framework, req.framework, "--framework"), req.ep)
    return Layout(gpu_id=gpu.id, num_gpus=req.num_gpus, nodes=req.nodes, zero=zero, fsdp=fsdp,
                  offload=parse_enum(Offload, req.offload, "--offload"), tp=tp, pp=pp, cp=cp, ep=req.ep, etp=etp,
                  ulysses=ulysses > 1)


def dataset_of(req: JobOptions) -> DatasetStats | None:
    """The catalog dataset(s) --dataset names (catalog.datasets.named); None without --dataset."""
    if not req.dataset:
        return None
    from trainplan.catalog.datasets import named

    return named(req.dataset)


def build_workload(req: JobOptions) -> Workload:
    if req.eval_fraction < 0 or req.checkpoint_saves < 0 or req.disk_gb_per_s <= 0:
        raise TrainplanError("--eval-fraction and --checkpoint-saves must be >= 0, --disk-gb-per-s > 0")
    samples = req.samples
    data = dataset_of(req)
    per_sample = req.tokens_per_sample
    if data is not None and per_sample is None and req.lengths_file is None:
        per_sample = max(1, round(data.mean_tokens))
    if req.tokens is not None:
        if req.samples is not None or req.max_steps is not None:
            raise TrainplanError("--tokens gives the run length: leave out --samples and --max-steps")
        samples = max(1, math.ceil(req.tokens / (per_sample or req.seq_len)))
    elif data is not None and samples is None and req.max_steps is None:
        samples = data.samples
    return Workload(samples=samples, tokens=req.tokens, steps=req.max_steps, tokens_per_sample=per_sample,
                    epochs=req.epochs,
                    packing=req.packing, padding_mask=req.padding_mask, retry_factor=req.retry_factor, eval_fraction=req.eval_fraction,
                    checkpoint_saves=req.checkpoint_saves, disk_bw_bytes_per_s=req.disk_gb_per_s * 1e9)


def read_lengths(path: str | None) -> tuple[int, ...] | None:
    """Sample lengths in tokens from a file: one integer per line (or separated by any white
    space), or a JSON list. A regular UTF-8 file of at most safeio.LENGTHS_FILE_LIMIT_BYTES: a
    FIFO, a device, an endless or a binary file is refused in one line, never read forever."""
    if path is None:
        return None
    import re

    from trainplan.safeio import LENGTHS_FILE_LIMIT_BYTES, parse_json, read_user_text

    what = "--lengths-file"
    text = read_user_text(path, what=what, limit_bytes=LENGTHS_FILE_LIMIT_BYTES)
    if text.lstrip().startswith("["):
        values = parse_json(text, what=what, path=path)
        if not isinstance(values, list):
            raise TrainplanError(f"{what} {path!r}: expected integers, one per line, or a JSON list")
    else:
        values = []
        for match in re.finditer(r"\S+", text):   # one at a time: no list of every word's string
            word = match.group()
            if not re.fullmatch(r"[+-]?[0-9]{1,18}", word):
                raise TrainplanError(f"{what} {path!r}: expected integers, one per line, or a JSON list; "
                                     f"got {word[:40]!r}")
            values.append(int(word))
    if not values:
        raise TrainplanError(f"{what} {path!r}: no lengths in the file")
    bad = next((v for v in values if isinstance(v, bool) or not isinstance(v, int) or v <= 0), None)
    if bad is not None or any(v >= 10**18 for v in values):
        raise TrainplanError(f"{what} {path!r}: lengths must be positive integers (tokens per sample), "
                             f"got {repr(bad)[:40] if bad is not None else 'a length of 10^18 or more'}")
    return tuple(values)


def check_efficiency(efficiency: float | None) -> float | None:
    if efficiency is not None and not 0 < efficiency <= 1:
        raise TrainplanError(f"--efficiency must be a fraction in (0, 1], got {efficiency}")
    return efficiency


def _bucket(value: int | str | None, auto: int, flag: str) -> int | None:
    """A ZeRO size in elements: an integer, or "auto" (what transformers' DeepSpeed integration fills)."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() == "auto":
        return auto
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != int(value):
        raise TrainplanError(f"{flag} must be a non-negative integer or auto, got {value!r}")
    return int(value)


def build_zero(req: JobOptions, spec: ModelSpec) -> ZeroConfig | None:
    """The DeepSpeed zero_optimization knobs given (None: DeepSpeed's defaults). "auto" is what
    transformers/integrations/deepspeed.py trainer_config_finalize fills from the model:
    reduce_bucket_size = h^2, stage3_prefetch_bucket_size = 0.9 h^2, persistence threshold = 10 h."""
    h = spec.hidden_size
    knobs = {"reduce_bucket_size": _bucket(req.reduce_bucket_size, h * h, "--reduce-bucket-size"),
             "prefetch_bucket_size": _bucket(req.prefetch_bucket_size, int(0.9 * h * h), "--prefetch-bucket-size"),
             "param_persistence_threshold": _bucket(req.param_persistence_threshold, 10 * h,
                                                    "--param-persistence-threshold"),
             "max_live_parameters": _bucket(req.max_live_parameters, 0, "--max-live-parameters"),
             "overlap_comm": req.overlap_comm, "offload_device": req.offload_device}
    given = {k: v for k, v in knobs.items() if v is not None}
    return ZeroConfig(**given) if given else None


def build_fsdp(req: JobOptions, framework: Framework) -> FsdpConfig | None:
    """The FSDP version and resharding given, over the framework's FSDP behaviour (None: that behaviour)."""
    if req.fsdp_version is None and req.reshard_after_forward is None:
        return None
    base = fsdp_for(framework)
    version = base.version if req.fsdp_version is None else req.fsdp_version
    if version not in (1, 2) or isinstance(version, bool):
        raise TrainplanError(f"--fsdp-version must be 1 or 2, got {req.fsdp_version!r}")
    reshard = base.reshard_after_forward if req.reshard_after_forward is None else bool(req.reshard_after_forward)
    return replace(base, version=version, reshard_after_forward=reshard,
                   whole_unit_grads=base.whole_unit_grads and version == 1)


def build_parallel(req: JobOptions) -> ParallelConfig:
    return ParallelConfig(sequence_parallel=req.sequence_parallel, virtual_stages=req.vpp,
                          uneven_pipeline=req.uneven_pipeline, sequential=_sequential(req))


def build_timing(req: JobOptions) -> TimingOptions:
    """The time model's options; reads --lengths-file."""
    lengths = read_lengths(req.lengths_file)
    data = dataset_of(req) if lengths is None and req.tokens_per_sample is None else None
    return TimingOptions(interconnect=req.interconnect, compiled=req.compile, efficiency=check_efficiency(req.efficiency),
                         pp_interleave=req.vpp, sample_lengths=data.lengths() if data is not None else lengths,
                         host_cpus=req.host_cpus,
                         host_mem_bw_bytes_per_s=None if req.host_mem_gb_per_s is None else req.host_mem_gb_per_s * 1e9,
                         pp_schedule=None if req.pp_schedule is None else
                         parse_enum(PipeSchedule, req.pp_schedule, "--pp-schedule"),
                         sequential_pipeline=_sequential(req))


def suggestable_gpus(gpus: tuple[GpuSpec, ...], precision: Precision,
                     book: PriceBook | None) -> tuple[tuple[GpuSpec, ...], str]:
    """The GPU types a "what would make it fit" suggestion may name, and a note on those left out:
    not those without tensor cores for the job's dtype (no V100 for bf16), and, when the bill's
    currency has its own market (CNY), only GPUs priced in that currency."""
    dtype = precision.needs_tensor_dtype
    out = tuple(g for g in gpus if dtype is None or g.supports(dtype))
    why = [f"with {dtype} tensor cores"] if len(out) < len(gpus) else []
    market = market_gpus(book) if book is not None else None
    if market is not None:
        kept = tuple(g for g in out if g.id in market)
        if len(kept) < len(out):
            why.append(f"priced in {book.currency} (its market) in the catalog or your prices")
        out = kept
    return out, ("GPU suggestions name only GPUs " + " and ".join(why)) if why else ""


FROM_FILE: Any = type("FROM_FILE", (), {"__repr__": lambda self: "FROM_FILE"})()


# frameworks that run the model's own transformers attention with the batch's attention mask (Unsloth
# runs a transformers model with its own attention kernels)
_TRANSFORMERS_MASK = RUNS_TRANSFORMERS - {Framework.UNSLOTH}


def padding_in_mask(setup: TrainingSetup, workload: Workload, timing: TimingOptions) -> bool:
    """Whether the micro-batches carry padding in their attention mask: as --padding-mask says
    (workload.padding_mask), else unpacked samples of the lengths given (--lengths-file), more than one
    per micro-batch, padded to the longest (not padding-free), under a framework that hands the mask to
    transformers (trainplan.timing.attention says what SDPA then runs)."""
    if workload.padding_mask is not None:
        return workload.padding_mask
    return (setup.framework in _TRANSFORMERS_MASK and not workload.packing and not setup.impl.padding_free
            and setup.micro_sequences > 1 and bool(timing.sample_lengths)
            and len(set(timing.sample_lengths)) > 1)


def with_padding_mask(setup: TrainingSetup, workload: Workload, timing: TimingOptions) -> TrainingSetup:
    """`setup` with impl.padding_mask as padding_in_mask gives it (the planner and the table re-derive
    it for each micro-batch they try: one sample per micro-batch pads nothing; a --padding-mask given
    holds for every one)."""
    mask = padding_in_mask(setup, workload, timing)
    return setup if mask == setup.impl.padding_mask else replace(setup, impl=replace(setup.impl, padding_mask=mask))


def resolve_job(req: JobOptions, *, today: date | None = None, calibration: Any = FROM_FILE,
                priced: bool = True, layout_given: bool = True, validated: bool = False) -> Job:
    """The Job of `req`. `today` dates the price catalog's offers (default: the local date);
    `calibration`: FROM_FILE loads the one `trainplan calibrate` wrote for the configured ledger and
    the handle on that ledger's recorded runs (ledger.recorded; both when req.calibration is on),
    None leaves it out, a Calibration is used as given. `priced=False` leaves the price out.
    `layout_given=False` (the planner chooses the layout) skips the layout checks of job/validate.py;
    `validated`: `req` comes straight from job/validate.validate_options (the API's keywords)."""
    req = req if validated else validate_options(req)
    if req.gpu is None:
        raise TrainplanError("--gpu must be a GPU name, got None")
    headroom = check_headroom(req.headroom)
    spec = resolve_model(req.model)
    gpu = resolve_gpu(req.gpu)
    setup = build_setup(req, spec, validated=True)
    layout = build_layout(req, gpu)
    workload = build_workload(req)
    parallel = build_parallel(req)
    timing = build_timing(req)
    pricing: Pricing | None = None
    missing = ""
    book = options_book(req) if priced else None
    if book is not None:
        try:
            pricing = resolve_pricing(gpu.id, book, today=today or date.today())
        except NoPriceError as exc:
            missing = str(exc)
    recorded = None
    if calibration is FROM_FILE:
        calibration = load_active() if req.calibration else None
        recorded = recorded_runs() if req.calibration else None
    gpus, gpus_note = suggestable_gpus(tuple(catalog.load_gpus().values()), setup.precision, book)
    setup = with_padding_mask(setup, workload, timing)
    fsdp, zero = build_fsdp(req, setup.framework), build_zero(req, spec)
    timing = replace(timing, fsdp=fsdp, zero=zero)   # the FSDP and ZeRO knobs the time model follows
    job = Job(setup=setup, layout=layout, gpu=gpu, workload=workload, parallel=parallel, timing=timing,
              zero=zero, fsdp=fsdp,
              pricing=pricing, price_missing=missing, book=book, headroom=headroom, calibration=calibration,
              recorded=recorded,
              gpus=gpus, gpus_note=gpus_note, options=req)
    notes = check_job(job, layout_given=layout_given)
    named = catalog.model_name_note(req.model) if isinstance(req.model, str) else None
    notes = (named, *notes) if named else notes
    data = dataset_of(req)
    if data is not None:
        counted = req.samples is None and req.tokens is None and req.max_steps is None
        lengths = req.lengths_file is None and req.tokens_per_sample is None
        notes = (*notes, data.describe() + data.use_note(samples=counted, lengths=lengths))
        if lengths and not req.packing and data.max_tokens < req.seq_len:
            # unpacked, the peak is the longest micro-batch: a sample of --seq-len tokens is the bound the
            # memory estimate keeps; the dataset's own longest sample is shorter (by its tokenizer's count)
            notes = (*notes, f"unpacked: the memory peak assumes a sample of --seq-len {req.seq_len} tokens; "
                             f"the longest of {data.id} is {data.max_tokens} tokens (as the dataset table counts "
                             f"them): --seq-len {data.max_tokens} gives the dataset's own peak")
    return replace(job, notes=notes) if notes else job
