"""The Python API: the CLI's commands as functions, with the setup flags as typed keyword arguments.

    import trainplan
    est = trainplan.estimate("llama-2-7b", method="lora", gpu="h100", samples=10_000)
    est.memory.device_bytes, est.time.step_s, est.cost.total

Each function resolves its keywords into a typed request once (catalog lookups, files, the price,
the calibration: job/resolve.py) and hands it to the pure computation: `estimate` to
trainplan.estimation.estimate(job), `plan` to planner.plan, `fit` to planner.fit, `table` to
planner.table. Those take the typed requests directly when you build them yourself.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, TypedDict

from trainplan.cost.prices import PriceOffer
from trainplan.errors import TrainplanError
from trainplan.estimation import estimate as estimate_job
from trainplan.estimation.result import Estimate
from trainplan.frozen import replace
from trainplan.job.job import Job
from trainplan.job.options import BOOKKEEPING, OPTION_NAMES, JobOptions
from trainplan.job.resolve import resolve_job
from trainplan.job.validate import PLANNER_COUNT_LIMIT, check_int, check_number, validate_options
from trainplan.planner.fit import FitResult, resolve_fit
from trainplan.planner.fit import fit as run_fit
from trainplan.planner.plan import PlanResult
from trainplan.planner.plan import plan as run_plan
from trainplan.planner.request import resolve_plan
from trainplan.planner.table import TableResult, resolve_table, resource_table
from trainplan.specs import GpuSpec, ModelSpec

if TYPE_CHECKING:     # for type checkers and IDEs only (PEP 692): keyword completion of **options
    from typing import Unpack



class Options(TypedDict, total=False):
    """The setup flags as keywords (tests/test_api.py holds them equal to JobOptions' fields)."""

    method: str
    precision: str | None
    optimizer: str | None
    lora_rank: int
    galore_rank: int
    apollo_rank: int
    lora_alpha: float | None
    lora_dropout: float
    lora_targets: str | tuple[str, ...] | None
    modules_to_save: str | tuple[str, ...] | None
    dora: bool
    quant: str | None
    double_quant: bool
    batch_size: int
    grad_accum: int
    seq_len: int
    grad_ckpt: str | None
    attention: str | None
    freeze_layers: int
    framework: str
    optimizer_in_backward: bool | None
    loss: str | None
    activation_offload: bool | None
    liger: bool | None
    load_fp32: bool | None
    gpu: str | GpuSpec
    num_gpus: int
    nodes: int
    zero: int | str
    fsdp: str
    offload: str
    tp: int
    pp: int
    cp: int
    ep: int
    etp: int | None
    samples: int | None
    tokens_per_sample: int | None
    epochs: float
    packing: bool
    retry_factor: float
    provider: str | None
    price_per_gpu_hour: float | None
    currency: str | None
    spot: bool
    price: tuple[str, ...]          # "GPU=AMOUNT" per GPU type, in `currency`
    prices: str | None              # a price file's path
    price_kind: str | None          # on-demand | spot | marketplace | reserved | any
    interconnect: str | None
    headroom: float
    sequence_parallel: bool
    vpp: int
    tokens: float | None            # total training tokens (instead of samples)
    host_cpus: int | None           # CPU cores per node (offloaded optimizer)
    host_mem_gb_per_s: float | None  # host DRAM bandwidth per node, GB/s
    fp8_recipe: str | None          # te-delayed | te-current | te-blockwise | te-mxfp8 | torchao-*
    pp_schedule: str | None         # gpipe | 1f1b | interleaved-1f1b | zb-h1 | zbv
    uneven_pipeline: bool
    pp_head_as_layer: bool | None
    compile: bool | None
    compile_loss: bool | None       # torch.compile over the loss (None: as compile)
    eval_fraction: float
    val_size: float | None          # held-out evaluation samples: a count, or a share of the data below 1
    eval_steps: float | None        # evaluate every N optimizer steps (below 1: that share of the run)
    eval_each_epoch: bool
    checkpoint_saves: int
    disk_gb_per_s: float
    lengths_file: str | None
    drop_long_samples: bool | None
    group_by_length: bool | None
    dataset: str | None             # catalog dataset name(s), comma-separated
    calibration: bool
    efficiency: float | None
    max_steps: int | None
    fsdp_version: int | None
    reshard_after_forward: bool | None
    ulysses: int
    stage: str | None
    ref_model: bool | None
    device_map: str | None
    padding_free: bool | None
    padding_mask: bool | None
    loss_upcast: bool | None
    launch_blocking: bool | None
    comm_overlap: bool | None
    moe_a2a_overlap: bool | None
    moe_dispatcher: str | None      # alltoall | deepep
    cpu_threads_per_rank: int | None
    flash_version: int | None       # 2 | 3 | 4
    experts_implementation: str | None   # grouped_mm | eager
    grad_ckpt_every: int | None
    reduce_bucket_size: int | str | None
    prefetch_bucket_size: int | str | None
    max_live_parameters: int | None
    param_persistence_threshold: int | str | None
    overlap_comm: bool | None
    offload_device: str | None
    configs: tuple[str, ...]        # --from: config files or launch lines, read under the keywords given


def options_of(model: str | ModelSpec | None, options: dict, *, need_model: bool = True) -> JobOptions:
    """JobOptions of the keywords: `configs` (--from) read first, the keywords given over them."""
    values = dict(options)
    unknown = sorted(k for k in values if k not in _KEYWORDS)
    if unknown:
        raise TrainplanError(f"unknown option {unknown[0]!r}: the options are JobOptions' fields "
                             "(trainplan.api.Options), e.g. method, gpu, num_gpus, batch_size")
    configs = values.pop("configs", ()) or ()
    if isinstance(configs, str):
        configs = (configs,)
    if not isinstance(configs, (tuple, list)) or not all(isinstance(c, str) for c in configs):
        raise TrainplanError(f"configs must be a list of config paths or launch lines, got {configs!r}")
    configs = tuple(configs)
    if "price" in values and isinstance(values["price"], list):
        values["price"] = tuple(values["price"])
    given = dict(values, **({"model": model} if model is not None else {}))
    if not configs:
        if model is None and need_model:
            raise TrainplanError("a model is required (model=..., or configs=[...] naming one)")
        return validate_options(JobOptions(model=model, **values, given=tuple(sorted(given))))
    from trainplan.importers.merge import check_gpu_count, from_configs

    validate_options(JobOptions(model=model, **values))    # the keywords themselves, before a config is read
    merged = from_configs(configs, JobOptions(model=model or "", **values), given)
    check_gpu_count(merged)
    if not merged.model and need_model:
        raise TrainplanError("a model is required: none of the configs names one (give model=...)")
    return validate_options(merged if merged.model else replace(merged, model=None))


_KEYWORDS = frozenset(OPTION_NAMES) - BOOKKEEPING - {"model"} | {"configs"}


def _names(value: object, what: str) -> tuple:
    """A tuple of names (a comma list as one string is split); anything else is refused in one line."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(v.strip() for v in value.split(",") if v.strip())
    if isinstance(value, (tuple, list)) and all(isinstance(v, (str, GpuSpec, ModelSpec)) for v in value):
        return tuple(value)
    raise TrainplanError(f"{what} must be a list of names, got {value!r}")


def _limits(**values: object) -> None:
    """The planner's own keywords: counts as integers, money and hours as finite positive numbers."""
    for name, value in values.items():
        if name in ("budget", "deadline_hours"):
            if value is not None:
                check_number(name.replace("_hours", ""), value, 0.0, 1e15, False, True)
        else:
            check_int(name, value, 1, PLANNER_COUNT_LIMIT)


def resolve(model: str | ModelSpec | None = None, *, today: datetime.date | None = None, **options: Unpack[Options]) -> Job:
    """The resolved Job of `model` and the setup flags (what `estimate` computes from; change it with
    trainplan.frozen.replace and estimate it with trainplan.estimation.estimate)."""
    return resolve_job(options_of(model, options), today=today, validated=True)   # options_of validated them


def estimate(model: str | ModelSpec | None = None, *, today: datetime.date | None = None, **options: Unpack[Options]) -> Estimate:
    """Memory, time and cost of one training setup.

    `options` are the setup flags with underscores: method="lora", precision="bf16",
    batch_size=4, seq_len=2048, gpu="h100", num_gpus=8, zero=3, samples=10000, ...
    `today` dates the price catalog's offers (default: the local date).
    """
    return estimate_job(resolve(model, today=today, **options))


def plan(model: str | ModelSpec | None = None, *, methods: tuple[str, ...] = (), gpus: tuple[str | GpuSpec, ...] | None = None,
         offers: tuple[PriceOffer, ...] | None = None, max_gpus: int = 64, gpus_per_node: int = 8,
         global_batch: int = 32, budget: float | None = None, deadline_hours: float | None = None,
         sort: str = "cost", top: int = 10, details: bool = True, today: datetime.date | None = None,
         **options: Unpack[Options]) -> PlanResult:
    """The setups that fit, ranked by cost (or time), with the Pareto front and the GPU types that
    cannot carry the job (`trainplan plan`). `offers`: prices given in code, asked before the price
    files and the catalog (`prices=` is a price file's path, as --prices)."""

    _limits(max_gpus=max_gpus, gpus_per_node=gpus_per_node, global_batch=global_batch, top=top,
            budget=budget, deadline_hours=deadline_hours)
    if not isinstance(sort, str):
        raise TrainplanError(f"--sort must be cost or time, got {sort!r}")
    methods, gpus = _names(methods, "methods"), (_names(gpus, "gpus") or None) if gpus is not None else None
    if offers is not None and (not isinstance(offers, (tuple, list)) or not all(isinstance(o, PriceOffer) for o in offers)):
        raise TrainplanError(f"offers must be a list of PriceOffer, got {offers!r}")
    request = resolve_plan(options_of(model, options), methods=methods, gpus=gpus, offers=offers,
                           max_gpus=max_gpus, gpus_per_node=gpus_per_node, global_batch=global_batch,
                           budget=budget, deadline_hours=deadline_hours, sort=sort, top=top, today=today)
    return run_plan(request, details=details)


def fit(model: str | ModelSpec, **options: Unpack[Options]) -> FitResult:
    """The largest micro-batch and the longest sequence that fit one layout (`trainplan fit`)."""
    return run_fit(resolve_fit(options_of(model, options)))


def table(models: tuple[str | ModelSpec, ...] = (), *, sizes: tuple[str, ...] = (),
          methods: tuple[str, ...] = ("full", "lora", "qlora"), precisions: tuple[str, ...] = (),
          quants: tuple[str, ...] = (), gpus: tuple[str, ...] = ("a100-80gb", "h100", "rtx4090"),
          max_gpus: int = 64, gpus_per_node: int = 8, global_batch: int = 32, db: str | None = None,
          today: datetime.date | None = None, **options: Unpack[Options]) -> TableResult:
    """The resource table (`trainplan table`): models x methods x precisions (x `quants`, QLoRA's
    quantized bases as columns, e.g. ("nf4", "int8")) -> for each GPU type the fewest GPUs that run
    the cell, memory per GPU at that count, time and cost, at `global_batch` sequences per optimizer
    step. `db` is the ledger whose calibration and recorded runs correct the cells (--db; default
    $TRAINPLAN_DB, else the default file when it exists). The printed page (paper size, language) is
    the writers' choice: trainplan.report.table_page.render_page(result, paper="letter")."""
    _limits(max_gpus=max_gpus, gpus_per_node=gpus_per_node, global_batch=global_batch)
    models, sizes, methods = _names(models, "models"), _names(sizes, "sizes"), _names(methods, "methods")
    precisions, quants, gpus = _names(precisions, "precisions"), _names(quants, "quants"), _names(gpus, "gpus")
    if db is not None and not isinstance(db, str):
        raise TrainplanError(f"db must be a ledger URL or a file path, got {db!r}")
    first = models[0] if models else None
    request = resolve_table(options_of(first, options, need_model=False), models=tuple(models), sizes=sizes, methods=methods,
                            precisions=precisions, quants=quants, gpus=gpus, max_gpus=max_gpus,
                            gpus_per_node=gpus_per_node, global_batch=global_batch, today=today, db=db)
    return resource_table(request)
