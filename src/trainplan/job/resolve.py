"""From what the user said (JobOptions) to a Job: names -> catalog specs, strings -> enums, defaults
from the framework profile, files read, the price chosen, the calibration loaded. All of a job's
I/O happens here; the estimate that follows is pure. The TrainingSetup is built in job/setup.py."""

from __future__ import annotations

import math

from trainplan import catalog
from trainplan.cost.prices import NoPriceError, PriceBook, Pricing, resolve_pricing
from trainplan.cost.sources import market_gpus, options_book
from trainplan.enums import Framework, Fsdp, Offload, PipeSchedule, Precision, ZeroStage
from trainplan.errors import TrainplanError
from trainplan.frozen import replace
from trainplan.job.frameworks import RUNS_TRANSFORMERS, default_expert_tp, profile
from trainplan.job.job import Job, check_headroom
from trainplan.job.options import JobOptions
from trainplan.job.setup import build_setup, parse_enum, resolve_gpu, resolve_model
from trainplan.job.setup import STAGES, block_coordinate, preference, supported_attention  # noqa: F401 (re-exported)
from trainplan.job.training import Layout, TrainingSetup, Workload
from trainplan.job.validate import check_job, validate_options
from trainplan.ledger.calibration import load_active
from trainplan.ledger.recorded import recorded_runs
from trainplan.memory.parallel import ParallelConfig
from trainplan.memory.sharding import FsdpConfig, ZeroConfig, fsdp_for
from trainplan.specs import GpuSpec, ModelSpec
from trainplan.timing.estimate import TimingOptions
from trainplan.units import date

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any

    from trainplan.catalog.datasets import DatasetStats


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
    held = held_out(req.val_size, trained=samples) if req.val_size else None
    if data is not None and samples is None and req.max_steps is None:
        samples = data.samples
        if req.val_size:
            # the held-out samples come out of the dataset (LLaMA-Factory split_dataset: train_test_split)
            held = min(held_out(req.val_size, total=samples), samples - 1)
            samples -= held
    return Workload(samples=samples, tokens=req.tokens, steps=req.max_steps, tokens_per_sample=per_sample,
                    epochs=req.epochs,
                    packing=req.packing, padding_mask=req.padding_mask, retry_factor=req.retry_factor, eval_fraction=req.eval_fraction,
                    eval_samples=held, eval_every_steps=req.eval_steps, eval_each_epoch=req.eval_each_epoch,
                    checkpoint_saves=req.checkpoint_saves, disk_bw_bytes_per_s=req.disk_gb_per_s * 1e9)


def held_out(val_size: float, *, total: int | None = None, trained: int | None = None) -> int | None:
    """Samples `val_size` holds out: a count as given (>= 1), or a share of the data (< 1): of `total` samples,
    ceil(share x total) (datasets' train_test_split rounds the test split up); of the `trained` ones that are left,
    the share's own ratio, share / (1 - share), of them. None where neither is known."""
    if val_size >= 1:
        return int(val_size)
    if total is not None:
        return math.ceil(val_size * total - 1e-9)
    if trained is not None:
        return round(trained * val_size / (1.0 - val_size))
    return None


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


def _flag_or_profile(req: JobOptions, name: str) -> bool:
    """The flag `name` where given, else the framework profile's (job.frameworks.Profile: torchtitan's pipeline
    split counts the head as a layer, ms-swift deletes over-long samples)."""
    given = getattr(req, name)
    if given is not None:
        return bool(given)
    return getattr(profile(parse_enum(Framework, req.framework, "--framework")), name)


def build_parallel(req: JobOptions) -> ParallelConfig:
    return ParallelConfig(sequence_parallel=req.sequence_parallel, virtual_stages=req.vpp,
                          uneven_pipeline=req.uneven_pipeline, sequential=_sequential(req),
                          head_as_layer=_flag_or_profile(req, "pp_head_as_layer"),
                          dual_pipe=str(req.pp_schedule or "").strip().lower() == PipeSchedule.DUALPIPE.value)


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
                         sequential_pipeline=_sequential(req), sequence_parallel=req.sequence_parallel,
                         pp_head_as_layer=_flag_or_profile(req, "pp_head_as_layer"),
                         drop_long_samples=_flag_or_profile(req, "drop_long_samples"),
                         group_by_length=bool(req.group_by_length))


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
    named = (catalog.model_name_note(req.model) if isinstance(req.model, str) else None,
             catalog.gpu_name_note(req.gpu, gpu) if isinstance(req.gpu, str) else None)
    notes = (*(n for n in named if n), *notes)
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
