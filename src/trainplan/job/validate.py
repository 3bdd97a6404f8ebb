"""One validation of what a user says about a job (JobOptions), run by every command and the API
before anything is computed, whether the flag is used by that command or not: finite numbers within
stated ranges, integers as integers (no bools, no 2.5), booleans as booleans (no "no"), choices
among their listed values. Then the checks that need the resolved model and GPU (`check_job`):
model size bounds, context length against the model's positions, kernel and dtype support per GPU,
layout combinations. Errors name the flag, the value (`!r`) and the range."""

from __future__ import annotations

import math

from trainplan.enums import (
    GALORE_OPTIMIZERS,
    Attention,
    ExpertsImpl,
    Fp8Recipe,
    Framework,
    Fsdp,
    GradCkpt,
    Loss,
    Method,
    MoeDispatcher,
    Offload,
    Optimizer,
    PipeSchedule,
    Position,
    Precision,
    Quant,
    ZeroStage,
)
from trainplan.errors import TrainplanError

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from trainplan.job.job import Job
    from trainplan.job.options import JobOptions
    from trainplan.specs import GpuSpec, ModelSpec

PLANNER_COUNT_LIMIT = 1 << 20   # --max-gpus, --gpus-per-node, --global-batch, --top: far beyond any cluster
BIG = 10 ** 12          # counts with no natural bound (samples, steps): far beyond any run, finite in float

# field -> (low, high) for integers (inclusive)
INTS: dict[str, tuple[int, int]] = {
    "lora_rank": (1, 65536), "galore_rank": (1, 65536), "apollo_rank": (1, 65536), "batch_size": (1, 1 << 20),
    "grad_accum": (1, 1 << 20),
    "seq_len": (1, 1 << 25),
    "num_gpus": (1, 1 << 20), "nodes": (1, 1 << 17), "tp": (1, 1024), "pp": (1, 1024), "cp": (1, 1024),
    "ep": (1, 1 << 14), "vpp": (1, 1024), "ulysses": (1, 1024), "checkpoint_saves": (0, 1 << 20),
}
OPT_INTS: dict[str, tuple[int, int]] = {
    "samples": (1, BIG), "tokens_per_sample": (1, 1 << 25), "max_steps": (1, BIG),
    "grad_ckpt_every": (1, 1 << 20), "max_live_parameters": (0, BIG), "host_cpus": (1, 1 << 16),
    "cpu_threads_per_rank": (1, 1 << 16), "etp": (1, 1024), "flash_version": (2, 4),
}
# field -> (low, high, low inclusive, high inclusive) for finite numbers
FLOATS: dict[str, tuple[float, float, bool, bool]] = {
    "lora_dropout": (0.0, 1.0, True, False), "epochs": (0.0, 1e6, False, True),
    "retry_factor": (1.0, 1000.0, True, True), "headroom": (0.0, 1.0, True, False),
    "eval_fraction": (0.0, 100.0, True, True), "disk_gb_per_s": (0.0, 1e6, False, True),
}
OPT_FLOATS: dict[str, tuple[float, float, bool, bool]] = {
    "lora_alpha": (0.0, 1e6, False, True), "price_per_gpu_hour": (0.0, 1e6, True, True),
    "efficiency": (0.0, 1.0, False, True), "host_mem_gb_per_s": (0.0, 1e5, False, True),
    "tokens": (1.0, 1e18, True, True), "val_size": (0.0, 1e12, False, True), "eval_steps": (0.0, 1e12, False, True),
}
BOOLS = ("dora", "double_quant", "packing", "spot", "sequence_parallel", "uneven_pipeline", "calibration",
         "eval_each_epoch")
OPT_BOOLS = ("optimizer_in_backward", "activation_offload", "liger", "load_fp32", "compile",
             "reshard_after_forward", "ref_model", "padding_free", "padding_mask", "overlap_comm",
             "loss_upcast", "launch_blocking", "comm_overlap", "moe_a2a_overlap", "pp_head_as_layer", "drop_long_samples",
             "group_by_length")
# choices parsed later by job/resolve.parse_enum: the same enums, checked here whether used or not
ENUMS = {"method": Method, "precision": Precision, "optimizer": Optimizer, "quant": Quant, "grad_ckpt": GradCkpt,
         "attention": Attention, "framework": Framework, "loss": Loss, "fsdp": Fsdp, "offload": Offload,
         "pp_schedule": PipeSchedule, "fp8_recipe": Fp8Recipe, "moe_dispatcher": MoeDispatcher,
         "experts_implementation": ExpertsImpl}
CHOICES = {"stage": ("sft", "pt", "dpo", "ipo", "kto", "orpo", "simpo", "cpo", "rm", "grpo", "ppo"),
           "device_map": ("auto", "balanced", "balanced_low_0", "sequential"),
           "offload_device": ("cpu", "nvme"),
           "price_kind": ("on-demand", "spot", "marketplace", "reserved", "any")}
TEXTS = ("provider", "currency", "interconnect", "dataset")
PATHS = ("prices", "lengths_file")        # read by safeio, which quotes them
BUCKETS = ("reduce_bucket_size", "prefetch_bucket_size", "param_persistence_threshold")


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _short(value: object) -> str:
    """repr, with a 400-digit integer shown as its size"""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:12]}... ({len(text)} characters)"


def _range(low: float, high: float, low_in: bool = True, high_in: bool = True) -> str:
    return f"{'[' if low_in else '('}{low:g}, {high:g}{']' if high_in else ')'}"


def check_int(name: str, value: object, low: int, high: int) -> int:
    """An integer in [low, high]: a bool, a float with a fraction or a string is refused."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    kind = {1: "a positive integer", 0: "a non-negative integer"}.get(low, f"an integer from {low:,}")
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise TrainplanError(f"{flag(name)} must be {kind} (at most {high:,}), got {_short(value)}")
    return value


def check_number(name: str, value: object, low: float, high: float, low_in: bool = True,
                 high_in: bool = True) -> float:
    """A finite number in the stated range (NaN, inf and bools are refused)."""
    span = _range(low, high, low_in, high_in)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TrainplanError(f"{flag(name)} must be a number in {span}, got {value!r}")
    number = float(value) if isinstance(value, float) or abs(value) < 1e300 else math.inf
    ok = math.isfinite(number) and (low <= number if low_in else low < number) \
        and (number <= high if high_in else number < high)
    if not ok:
        raise TrainplanError(f"{flag(name)} must be a finite number in {span}, got {_short(value)}")
    return number


def _check_choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if not isinstance(value, str) or value.strip().lower() not in choices:
        raise TrainplanError(f"{flag(name)} {value!r} is not one of: {', '.join(choices)}")


def _check_enum(name: str, value: object, cls: type) -> None:
    if isinstance(value, cls):
        return
    if isinstance(value, str):
        try:
            cls(value.lower())      # as job/resolve.parse_enum reads it (aliases included)
            return
        except ValueError:
            pass
    raise TrainplanError(f"{flag(name)} {value!r} is not one of: {', '.join(str(m.value) for m in cls)}")


def _check_zero(value: object) -> None:
    if isinstance(value, ZeroStage):
        return
    if isinstance(value, str) and value.strip() in ("0", "1", "2", "3"):
        return
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value not in (0, 1, 2, 3):
        raise TrainplanError(f"--zero {value!r} is not one of: 0, 1, 2, 3")


def _control(text: str) -> bool:
    """A control character (newline, tab, NUL, ESC ...): never part of a name, and it would split
    the one-line error or a table."""
    return any(ord(c) < 32 or ord(c) == 127 for c in text)


def _check_text(name: str, value: object, *, optional: bool = True, paths: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or "\x00" in value:
        raise TrainplanError(f"{flag(name)} must be a string, got {_short(value)}")
    if not paths and _control(value):
        raise TrainplanError(f"{flag(name)} {value!r} has a control character: no name has one")


def _check_names(name: str, value: object) -> None:
    """A comma list as one string, or a tuple/list of strings."""
    if value is None:
        return
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not all(isinstance(v, str) for v in value):
        raise TrainplanError(f"{flag(name)} must be a comma list or a list of strings, got {_short(value)}")
    if any(_control(v) for v in value):
        raise TrainplanError(f"{flag(name)} {value!r} has a control character: no name has one")


def validate_options(opts: JobOptions) -> JobOptions:
    """Raise TrainplanError (one line: the flag, the value, the range) for any value out of type or
    range, used by the command or not. Returns `opts` with integral floats as ints (8.0 -> 8). (A model of None is for `table`,
    whose rows name their models; resolving one job needs a model.)"""
    from trainplan.specs import GpuSpec, ModelSpec

    v = opts.__getattribute__
    ints = {name: v(name) for name in (*INTS, *OPT_INTS, "freeze_layers", "fsdp_version", "zero", *BUCKETS)
            if isinstance(v(name), float) and math.isfinite(v(name)) and v(name).is_integer()}
    if ints:      # 8.0 GPUs is 8 GPUs: integral floats become ints (2.5 is refused below)
        from trainplan.frozen import replace

        opts = replace(opts, **{name: int(value) for name, value in ints.items()})
        v = opts.__getattribute__
    model = v("model")
    if model is not None and not isinstance(model, ModelSpec) and not (isinstance(model, str) and model.strip()):
        raise TrainplanError(f"--model must be a catalog name, an HF id or a config path, got {model!r}")
    gpu = v("gpu")
    # None: not given, for a command that chooses it (probe: the local GPU); resolve_job refuses None
    if gpu is not None and not isinstance(gpu, GpuSpec) and not (isinstance(gpu, str) and gpu.strip()):
        raise TrainplanError(f"--gpu must be a GPU name, got {gpu!r}")
    for name, (low, high) in INTS.items():
        check_int(name, v(name), low, high)
    for name, (low, high) in OPT_INTS.items():
        if v(name) is not None:
            check_int(name, v(name), low, high)
    for name, bounds in FLOATS.items():
        check_number(name, v(name), *bounds)
    for name, bounds in OPT_FLOATS.items():
        if v(name) is not None:
            check_number(name, v(name), *bounds)
    for name in BOOLS:
        if not isinstance(v(name), bool):
            raise TrainplanError(f"{flag(name)} must be true or false, got {v(name)!r}")
    for name in OPT_BOOLS:
        if v(name) is not None and not isinstance(v(name), bool):
            raise TrainplanError(f"{flag(name)} must be true, false or unset, got {v(name)!r}")
    for name, cls in ENUMS.items():
        if v(name) is not None or name in ("method", "framework", "fsdp", "offload"):
            _check_enum(name, v(name), cls)
    for name, choices in CHOICES.items():
        if v(name) is not None:
            _check_choice(name, v(name), choices)
    _check_zero(v("zero"))
    freeze = v("freeze_layers")
    if isinstance(freeze, bool) or not isinstance(freeze, int) or freeze == 0 or abs(freeze) > 1 << 20:
        raise TrainplanError(f"--freeze-layers must be a non-zero integer (-N: the first N layers), got {freeze!r}")
    fsdp_version = v("fsdp_version")
    if fsdp_version is not None and (isinstance(fsdp_version, bool) or fsdp_version not in (1, 2)):
        raise TrainplanError(f"--fsdp-version must be 1 or 2, got {fsdp_version!r}")
    for name in BUCKETS:
        value = v(name)
        if value is None or (isinstance(value, str) and value.strip().lower() == "auto"):
            continue
        if isinstance(value, str):
            raise TrainplanError(f"{flag(name)} must be a non-negative integer or auto, got {value!r}")
        check_int(name, value, 0, BIG)
    for name in TEXTS:
        _check_text(name, v(name))
    for name in PATHS:
        _check_text(name, v(name), paths=True)
    for name in ("model", "gpu"):
        if isinstance(v(name), str):
            _check_text(name, v(name))
    _check_names("lora_targets", v("lora_targets"))
    _check_names("modules_to_save", v("modules_to_save"))
    price = v("price")
    if not isinstance(price, (tuple, list)) or not all(isinstance(p, str) for p in price):
        raise TrainplanError(f"--price must be a list of GPU=AMOUNT strings, got {price!r}")
    return opts


# --- the resolved job --------------------------------------------------------------------------------

# The largest published LLMs (2025) times a margin: per-layer structures are built layer by layer,
# so a config with 10^9 layers would take minutes and gigabytes. Deepest: Llama-3.1-405B's 126 layers;
# widest: 25,600 hidden (Megatron 1T); vocabularies to 262,144 (Gemma 3); experts to 384 (Kimi K2).
MODEL_BOUNDS: dict[str, int] = {"num_layers": 2048, "hidden_size": 1 << 17, "num_heads": 4096,
                                "num_kv_heads": 4096, "head_dim": 8192, "intermediate_size": 1 << 20,
                                "vocab_size": 1 << 24}
MAX_EXPERTS = 1 << 14
BOUND_LINE = ("model size bound: at most 2,048 layers, 131,072 hidden, 4,096 heads, 1,048,576 MLP width, "
              "16,777,216 vocabulary, 16,384 experts (16x the largest published models)")


def check_model_size(spec_or_fields: object, name: str = "") -> None:
    """Refuse a model beyond MODEL_BOUNDS (a ModelSpec, or the fields dict a config reader built)."""
    get = spec_or_fields.get if isinstance(spec_or_fields, dict) else \
        (lambda key, default=None: getattr(spec_or_fields, key, default))
    label = name or get("name", "") or "the model"
    for key, high in MODEL_BOUNDS.items():
        value = get(key)
        if isinstance(value, int) and value > high:
            raise TrainplanError(f"{label!r:.80}: {key} = {_short(value)} is beyond any real model; {BOUND_LINE}")
    moe = get("moe")
    experts = getattr(moe, "num_experts", 0) if moe is not None else 0
    if isinstance(experts, int) and experts > MAX_EXPERTS:
        raise TrainplanError(f"{label!r:.80}: {experts} experts is beyond any real model; {BOUND_LINE}")


def check_job(job: Job, *, layout_given: bool = True) -> tuple[str, ...]:
    """Errors for combinations that cannot run; notes (returned) for legal ones worth a word.
    `layout_given=False` (the planner chooses the layout) skips the layout checks."""
    setup, layout, gpu, opts = job.setup, job.layout, job.gpu, job.options
    spec = setup.model
    notes: list[str] = []
    notes += _positions(spec, setup.seq_len, given=opts is None or "seq_len" in opts.given)
    _kernels(setup.attention, setup.precision, gpu, planner=not layout_given)
    from trainplan.job.capabilities import flash_refusal

    if (refused := flash_refusal(setup.framework, setup.attention, setup.impl.flash_version,
                                 gpu if layout_given else None)) is not None:
        raise TrainplanError(refused)
    if setup.impl.fp8_recipe is Fp8Recipe.TE_MXFP8 and gpu.generation.lower() != "blackwell" and layout_given:
        # Transformer Engine checks MXFP8 support by compute capability (transformer_engine/pytorch/
        # quantization.py check_mxfp8_support: "MXFP8 ... Blackwell", sm100+)
        raise TrainplanError(f"--fp8-recipe te-mxfp8 needs Blackwell tensor cores; {gpu.id!r} is "
                             f"{gpu.generation or 'not Blackwell'}: use te-current, te-delayed or te-blockwise")
    if opts is not None and opts.experts_implementation is not None:
        from trainplan.job.frameworks import RUNS_TRANSFORMERS

        if setup.framework not in RUNS_TRANSFORMERS:
            raise TrainplanError(f"--experts-implementation is how transformers runs an MoE model's experts; "
                                 f"--framework {setup.framework} runs its own grouped GEMMs")
        if spec.moe is None:
            notes.append(f"--experts-implementation {opts.experts_implementation}: {spec.name} has no routed experts, "
                         "so it changes nothing")
    if opts is not None and opts.dora and setup.method not in (Method.LORA, Method.QLORA):
        raise TrainplanError(f"--dora applies to --method lora or qlora, not {str(setup.method)!r}")
    if not layout_given:
        return tuple(notes)
    if opts is not None and opts.vpp > 1 and layout.pp == 1:
        raise TrainplanError(f"--vpp {opts.vpp} interleaves pipeline stages: it needs --pp > 1")
    if opts is not None and opts.pp_schedule is not None and layout.pp == 1:
        raise TrainplanError(f"--pp-schedule {opts.pp_schedule} schedules pipeline stages: it needs --pp > 1")
    schedule = str(opts.pp_schedule).lower() if opts is not None and opts.pp_schedule is not None else ""
    if schedule == "interleaved-1f1b" and opts.vpp < 2:
        raise TrainplanError("--pp-schedule interleaved-1f1b runs several model chunks per rank: give --vpp 2 or more")
    if schedule == "zbv" and opts.vpp not in (1, 2):
        raise TrainplanError(f"--pp-schedule zbv runs two model chunks per rank (a V shape), not --vpp {opts.vpp}")
    if schedule == "dualpipe" and (layout.pp % 2 or setup.grad_accum % 2 or setup.grad_accum < 2 * layout.pp
                                   or opts.vpp > 1):
        # deepseek-ai/DualPipe dualpipe/dualpipe.py DualPipe.step: `assert num_ranks % 2 == 0` and
        # `num_chunks % 2 == 0 and num_chunks >= num_ranks * 2`; its two stages a rank are its own chunks
        raise TrainplanError(f"--pp-schedule dualpipe needs an even --pp and an even --grad-accum of at least "
                             f"2 x --pp, without --vpp (got --pp {layout.pp}, --grad-accum {setup.grad_accum}"
                             f"{f', --vpp {opts.vpp}' if opts.vpp > 1 else ''})")
    if setup.framework is Framework.MEGATRON and layout.zero in (ZeroStage.GRADIENTS, ZeroStage.PARAMETERS):
        raise TrainplanError(f"--framework megatron has no ZeRO-{int(layout.zero)}: its distributed optimizer "
                             "shards the optimizer states (--zero 1); use --framework deepspeed for ZeRO-2/3")
    notes += _stack(setup.framework, layout, setup.optimizer, said=opts is not None and (
        "framework" in opts.given or any(getattr(x, "field", "") == "framework" for x in opts.provenance)))
    per_node = layout.gpus_per_node
    if per_node > MAX_GPUS_PER_NODE:
        raise TrainplanError(f"--num-gpus {layout.num_gpus} on --nodes {layout.nodes} puts {per_node} GPUs in one "
                             f"node; servers hold at most {MAX_GPUS_PER_NODE} (8 on HGX/DGX): give --nodes")
    if layout.tp > per_node:
        notes.append(f"tensor parallel {layout.tp} spans nodes of {per_node} GPUs: its all-reduces cross the "
                     "inter-node network (keep --tp within a node)")
    return tuple(notes)


MAX_GPUS_PER_NODE = 16


def _stack(framework: Framework, layout, optimizer: Optimizer, *, said: bool) -> list[str]:
    """Tensor and pipeline parallelism, GaLore and Muon, only where the framework runs them
    (job/capabilities.CAPABILITIES, the table the planner searches by): `--framework llamafactory --tp 2`
    (the framework said, by a flag or a config) is no setup anyone can run; with the default framework it
    is a note."""
    from trainplan.job.capabilities import capabilities

    caps = capabilities(framework)
    notes = []
    wants = [(layout.tp > 1 and not caps.tp, f"tensor parallelism (--tp {layout.tp})"),
             (layout.pp > 1 and not caps.pp, f"pipeline parallelism (--pp {layout.pp})"),
             (optimizer in GALORE_OPTIMIZERS and optimizer not in caps.optimizers, f"GaLore (--optimizer {optimizer})"),
             (optimizer is Optimizer.APOLLO_ADAMW and optimizer not in caps.optimizers,
              "APOLLO (--optimizer apollo-adamw)"),
             (optimizer is Optimizer.MUON and optimizer not in caps.optimizers, "Muon (--optimizer muon)"),
             (optimizer is Optimizer.ADAM_MINI and optimizer not in caps.optimizers,
              "Adam-mini (--optimizer adam-mini)")]
    for refused, what in wants:
        if refused:
            text = caps.cannot_run(framework, what)
            if said:
                raise TrainplanError(text)
            notes.append(f"{text}; estimated as the layout given (the default framework was not chosen)")
    return notes


def _positions(spec: ModelSpec, seq_len: int, *, given: bool = True) -> list[str]:
    """--seq-len against max_position_embeddings: refused for learned absolute positions (there is no
    row for position s), a note for RoPE and ALiBi (they run, but beyond the trained length only with
    RoPE scaling or at a quality cost). The default --seq-len (not given) beyond learned positions is a
    note saying what to give."""
    limit = spec.max_position_embeddings
    if not limit or seq_len <= limit:
        return []
    if spec.position is Position.LEARNED and not given:
        return [f"the default --seq-len {seq_len} is beyond the {limit} learned position embeddings of "
                f"{spec.name!r}: no such run exists; give --seq-len {limit} or less"]
    if spec.position is Position.LEARNED:
        raise TrainplanError(f"--seq-len {seq_len} is beyond the {limit} learned position embeddings of "
                             f"{spec.name!r} (max_position_embeddings): use --seq-len {limit} or less")
    how = "RoPE scaling (rope_scaling in the config)" if spec.position is Position.ROPE else "ALiBi extrapolation"
    return [(f"--seq-len {seq_len} is beyond the max_position_embeddings {limit} of {spec.name!r}: it runs, but "
             f"quality there needs {how} or training at that length")]


_NO_FLASH = frozenset({"volta", "turing", "pascal"})   # FlashAttention-2: compute capability >= 8.0


def _kernels(attention: Attention, precision: Precision, gpu: GpuSpec, *, planner: bool) -> None:
    if attention is Attention.FLASH and gpu.generation.lower() in _NO_FLASH and not planner:
        raise TrainplanError(f"--attention flash needs compute capability 8.0 or newer (FlashAttention-2); "
                             f"{gpu.id!r} is {gpu.generation}: use --attention sdpa (memory-efficient kernel) or eager")
    if precision is Precision.FP8 and not gpu.supports("fp8") and not planner:
        raise TrainplanError(f"--precision fp8 needs fp8 tensor cores (Hopper, Ada, Blackwell, MI300); {gpu.id!r} "
                             "has none: use --precision bf16")
