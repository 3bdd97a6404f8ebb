"""Free text of a run's description read into settings, generously and the same way for every
source: the framework by its names (job/frameworks.NAMES), `key=value` / `--key value` settings
written into the text (under the spellings the frameworks' configs and READMEs use), precision,
checkpointing, attention, quantization and GPU from their own fields (the optimizer: cases.optimizer_text).

Nothing here knows a case or a source: each rule reads a word or a field a description of any run
could carry. A value that cannot be read raises Skip (cases/common.py) with why.
"""

from __future__ import annotations

import re
from typing import Any

from trainplan import catalog
from trainplan.cases.common import Skip, text
from trainplan.cases.optimizer_text import memory_optimizer
from trainplan.enums import ExpertsImpl, Framework, PipeSchedule
from trainplan.job.defaults import torchtitan as titan
from trainplan.job.capabilities import flash_version_named
from trainplan.job.frameworks import framework_in_text
from trainplan.specs import GpuSpec

_TRUE = {"true", "yes", "on", "1", "enabled", "enable"}
_FALSE = {"false", "no", "off", "0", "disabled", "disable", "none"}
# `key=value` (no spaces around "=", as flag lists and overrides are written) or `--key value`
_PAIR = re.compile(r"(?<![\w.\-])(?:--)?([a-z][a-z0-9_.\-]*)=([^\s,;)=]+)|--([a-z][a-z0-9_\-]*)\s+([^\s,;)\-][^\s,;)]*)")

# spellings of one setting across frameworks' configs and READMEs -> (JobOptions field, kind)
_KEYS = {
    "compile": ("compile", "bool"), "torch_compile": ("compile", "bool"),
    "opt_in_bwd": ("optimizer_in_backward", "bool"), "optimizer_in_bwd": ("optimizer_in_backward", "bool"),
    "optimizer_in_backward": ("optimizer_in_backward", "bool"),
    "act_offload": ("activation_offload", "bool"), "enable_activation_offloading": ("activation_offload", "bool"),
    "activation_offloading": ("activation_offload", "bool"), "activation_offload": ("activation_offload", "bool"),
    "chunked_ce": ("loss", "chunked"), "chunked_cross_entropy": ("loss", "chunked"),
    "ac": ("grad_ckpt", "ckpt"), "enable_activation_checkpointing": ("grad_ckpt", "ckpt"),
    "gradient_checkpointing": ("grad_ckpt", "ckpt"), "activation_checkpointing": ("grad_ckpt", "ckpt"),
    "packed": ("packing", "bool"), "packing": ("packing", "bool"), "sample_packing": ("packing", "bool"),
    "use_liger_kernel": ("liger", "liger"), "enable_liger_kernel": ("liger", "liger"),
    "precision": ("precision", "precision"), "opt": ("optimizer", "optimizer"),
    "group_by_length": ("group_by_length", "bool"),
}
# Lightning-style precision names (litgpt `--precision`, Fabric) -> trainplan precision
_PRECISIONS = {"bf16-true": "bf16-pure", "16-true": "fp16-pure", "bf16-mixed": "bf16", "16-mixed": "fp16",
               "32-true": "fp32", "32": "fp32", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8"}


def framework_of(case: dict) -> Framework:
    """The framework the case's `framework` text names (job/frameworks.NAMES), else Skip."""
    found = framework_in_text(str(case.get("framework") or ""))
    if found is None:
        raise Skip(f"framework {case.get('framework')!r} not recognised (no framework trainplan has a profile for)")
    return found[0]


# Frameworks without a profile of their own that run a profile's regime, as their code shows (the notes say so):
# Colossal-AI's booster plugins train a transformers model (examples/language/llama2/benchmark.py @01ee32a7 boosts
# transformers' LlamaForCausalLM; colossalai/shardformer's policies are written for transformers' models) under ZeRO
# with 16-bit parameters and fp32 master weights kept in the optimizer (colossalai/booster/plugin/gemini_plugin.py
# @3432ae36, GeminiPlugin: shard_param_frac 1.0 "is equal to zero-3"; master_weights "Whether to keep fp32 master
# parameter weights in optimizer. Defaults to True"): DeepSpeed ZeRO's regime over a transformers model.
ANALOGUES: tuple[tuple[re.Pattern, Framework, str], ...] = (
    (re.compile(r"colossal[\s_-]?ai", re.IGNORECASE), Framework.DEEPSPEED,
     "Colossal-AI read as DeepSpeed's regime: its plugins shard a transformers model under ZeRO with fp32 master "
     "weights in the optimizer (colossalai/booster/plugin/gemini_plugin.py)"),
)

# Adapters and 4-bit bases come from peft and bitsandbytes on transformers models (peft's LoraConfig,
# bitsandbytes' Linear4bit: QLoRA is defined by them), whatever trainer runs the loop
_ADAPTER_METHODS = frozenset({"lora", "qlora"})


def framework_or_assumed(case: dict) -> tuple[Framework, str | None]:
    """The framework the case names, or, where it names none trainplan has a profile for (an in-house or
    other stack, or nothing), the stack its method runs in, with a note saying so: a LoRA or QLoRA run the
    Hugging Face (transformers + peft) stack its adapters come from; any other a Megatron-class stack (fused
    kernels, 16-bit weights with fp32 master weights and Adam states in the optimizer), as pre-training
    frameworks without a profile (InternEvo, Nanotron, in-house ones) run it; a framework whose code runs a
    profile's regime (ANALOGUES) is read as that profile, with a note."""
    try:
        return framework_of(case), None
    except Skip:
        pass
    named = case.get("framework")
    for pattern, framework, note in ANALOGUES:
        if pattern.search(str(named or "")):
            return framework, note
    said = f"framework {named!r:.80} has no trainplan profile" if named else "framework not stated"
    if case.get("method") in _ADAPTER_METHODS:
        return Framework.HF, f"{said}: the Hugging Face (transformers + peft) stack its LoRA adapters come from"
    return Framework.MEGATRON, f"{said}: a Megatron-class stack assumed (fused kernels, fp32 master weights and " \
                               "Adam states in the optimizer)"


def _bool(value: str) -> bool | None:
    v = value.strip().lower().strip("'\"")
    return True if v in _TRUE else False if v in _FALSE else None


def embedded_settings(value: Any) -> tuple[dict[str, Any], list[str]]:
    """Settings written into a text as `key=value`, `key: value` or `--key value` (a README's flag
    list, a command line), mapped to JobOptions fields; and notes on what they set."""
    low = text(value)
    out: dict[str, Any] = {}
    notes: list[str] = []
    for m in _PAIR.finditer(low):
        key, raw = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        key = key.replace("-", "_").split(".")[-1]
        if key not in _KEYS:
            continue
        name, kind = _KEYS[key]
        flag = _bool(raw)
        if kind == "bool" and flag is not None:
            out[name] = flag
        elif kind == "ckpt" and flag is not None:
            out[name] = "full" if flag else "none"
        elif kind == "chunked" and flag is not None:
            out[name] = "chunked" if flag else "full"
        elif kind == "liger" and flag is not None:
            out["liger"] = flag
            if flag:
                out["loss"] = "fused"
        elif kind == "precision" and raw.strip("'\"") in _PRECISIONS:
            out[name] = _PRECISIONS[raw.strip("'\"")]
        elif kind == "optimizer":
            opt, _ = memory_optimizer(raw)
            if opt is not None:
                out[name] = opt.value
        else:
            continue
        notes.append(f"{key}={raw} in the description: {name} {out.get(name)}")
    if re.search(r"\b(torch\.)?compile (is )?enabled\b", low):
        out.setdefault("compile", True)
    if "liger" not in out and (m := _LIGER.search(low)) and not _LIGER_OFF.match(low, m.end()) \
            and not _NEGATION.search(low[:m.start()]):
        out["liger"], out["loss"] = True, "fused"       # "with Liger kernels", "Liger ON", "+ Liger"
        notes.append(f"{m.group(0)!r} in the description: liger True")
    return out, notes


_LIGER = re.compile(r"\bliger(?:[-_ ]kernels?)?\b")
_LIGER_OFF = re.compile(r"\s*(?:[=:]\s*)?(?:off|false|disabled|no)\b")
_NEGATION = re.compile(r"\b(?:no|not|without|disabled?|w/o)\s+(?:the\s+)?$")


# --- fields ---------------------------------------------------------------------------------------

# "selective" under torchtitan is its op-level policy: the llama3 8B/70B/405B train configs it ships set
# activation_checkpoint.mode = "selective" with selective_ac_option = "op" (train_configs/llama3_*.toml
# at 9dec370, 2024-12-26; models/llama3/train_configs/*.toml at v0.2.2); an integer option instead
# checkpoints every n-th block whole (torchtitan _apply_layer_sac), which the text then says ("every 2 layers",
# "option 2"), as does fms-fsdp's selective_checkpointing p = 1/n (fms_fsdp/policies/ac_handler.py): "every 3rd
# block", "one block in 3" (a number is needed: "selective recompute in every layer" is Megatron's own).
_EVERY_NTH = re.compile(r"\bevery\s+(\d+)(?:st|nd|rd|th)?\s+(?:decoder\s+)?(?:blocks?|layers?)\b|"
                        r"\bone\s+(?:decoder\s+)?(?:block|layer)\s+in\s+(\d+)\b|"
                        r"\b(?:selective_)?(?:ac_)?option\s*[=:]?\s*['\"]?(\d+)", re.IGNORECASE)


_CKPT_OPTION = re.compile(r"\buse_reentrant\b\W*\w+|\bpreserve_rng_state\b\W*\w+")


def grad_ckpt_of(value: Any, framework: Framework | None = None) -> str | None:
    """True / "selective" / free text ("full", "yes (unsloth)", "enabled", "activate: True") ->
    none | full | selective | op; None when the text does not say ("not stated": the framework's default).
    `framework` reads "selective" in that framework's own sense (torchtitan: the op-level policy)."""
    if value is True:
        return "full"
    if value is False:
        return "none"
    if isinstance(value, str):
        # a checkpointing option says checkpointing is on, whatever its value (HF gradient_checkpointing_kwargs)
        low = _CKPT_OPTION.sub(" checkpointing ", value.lower())
        if re.search(r"\bnot (stated|given|known|specified)\b|\bunknown\b", low):
            return None
        if _EVERY_NTH.search(low):
            return "full"           # whole blocks recomputed, every n-th of them (ckpt_every_of)
        if re.search(r"\bper[- ]?op\b", low):
            return "op"             # torchtitan's per-op selective policy (selective_ac_option = "op")
        if "selective" in low or re.search(r"\bsac\b", low):
            if framework is Framework.TORCHTITAN:
                return "op"
            return "selective"
        if re.fullmatch(r"\s*[01]\s*", low):
            return "full" if low.strip() == "1" else "none"
        if re.search(r"\b(no|none|off|false|disabled|not enabled|not used|unused)\b", low):
            return "none"
        if re.search(r"\b(true|full|yes|on|enabled|unsloth|activate)\b", low) or "checkpointing" in low:
            return "full"
    return None


def ckpt_every_of(value: Any) -> int | None:
    """The n of a checkpointing text that covers every n-th block only; None when it says no such thing."""
    if not isinstance(value, str):
        return None
    found = _EVERY_NTH.search(value)
    if not found:
        return None
    n = int(next(g for g in found.groups() if g))
    return n if n >= 1 else None


def attention_of(value: Any) -> str | None:
    a = text(value)
    if "flash" in a or flash_version_of(a):
        return "flash"
    if "sdpa" in a or "scaled_dot_product" in a:      # torch.nn.functional.scaled_dot_product_attention
        return "sdpa"
    if "eager" in a:
        return "eager"
    return None


_TRANSFORMERS_5 = re.compile(r"transformers\s*(?:==|>=|~=|v)?\s*5(?:\.\d+)*\b|\bgrouped_mm\b")


def experts_of(case: dict) -> ExpertsImpl:
    """How transformers ran an HF MoE case's experts: grouped_mm when its text names transformers 5 (or
    grouped_mm itself), else the per-expert loop of transformers 4.x, which the published runs predate v5 on
    (timing.hf_moe)."""
    said = text(case.get("framework")) + " " + text(case.get("notes"))
    return ExpertsImpl.GROUPED_MM if _TRANSFORMERS_5.search(said) else ExpertsImpl.LOOP


def flash_version_of(value: Any) -> int | None:
    """The FlashAttention major version an attention text names ("FlashAttention-3", "FA3", "flash_attention_3",
    "flash-attn 3": job.capabilities.flash_version_named), None when it names none."""
    return flash_version_named(text(value))


def precision_of(case: dict, framework: Framework, sharded: bool) -> tuple[str | None, bool | None, str | None]:
    """(precision, frozen weights in fp32, note) from the case's precision fields: what the weights,
    the compute, the master copy and the optimizer states are kept in."""
    prec = case.get("precision") or {}
    if isinstance(prec, str):
        prec = {"weights": prec}
    weights, compute = text(prec.get("weights")), text(prec.get("compute"))
    master, states = text(prec.get("master_weights")), text(prec.get("optimizer_states"))
    if "16-true" in weights + compute or "pure bf16" in weights + compute:
        return "bf16-pure" if "bf16" in weights + compute else "fp16-pure", None, \
            "16-bit weights and optimizer states (no fp32 copy)"
    if "fp8" in compute:
        return "fp8", None, None
    if weights.startswith("fp32") and compute.startswith("fp32"):
        return "fp32", None, "fp32 weights and compute (no mixed precision)"
    if weights.startswith("fp32"):
        return ("fp16" if "fp16" in compute else "bf16"), True, "frozen weights kept in fp32 under mixed precision"
    sixteen = "bf16" in weights or "fp16" in weights or "16-bit" in weights
    no_copy = master in ("", "none", "null") and ("fp32" not in states)
    if case.get("method") in ("full", "pretrain") and sixteen and no_copy and not sharded:
        pure = "fp16-pure" if "fp16" in weights and "bf16" not in weights else "bf16-pure"
        return pure, None, "16-bit weights trained without an fp32 copy (master weights: none stated)"
    return None, None, None


def quant_of(case: dict) -> tuple[str | None, bool, str | None]:
    """(quant kind, double quantization, note) of a QLoRA case; the field may be an object or a string."""
    q = case.get("quantization")
    if case.get("method") != "qlora":
        return None, False, None
    if isinstance(q, str):
        q = {"type": q}
    q = q or {}
    # the schema's keys, and transformers' BitsAndBytesConfig's (bnb_4bit_quant_type, bnb_4bit_use_double_quant,
    # load_in_8bit) where a case copies its quantization_config
    named = q.get("type") or q.get("kind") or q.get("bnb_4bit_quant_type") or q.get("quant_type")
    kind = text(named) if named else text({k: v for k, v in q.items() if "double" not in str(k)})
    if not named and _flag(q.get("load_in_8bit")):
        kind = "int8"
    note = None
    if "gptq" in kind or "int4" in kind or "awq" in kind:
        note = f"{named}: 4-bit weights counted as nf4 (0.5 byte/param plus block constants)"
    quant = "fp4" if "fp4" in kind else "int8" if ("int8" in kind or "8-bit" in kind or "8bit" in kind) else "nf4"
    double = any(_flag(q.get(k)) for k in ("double_quant", "bnb_4bit_use_double_quant", "use_double_quant"))
    return quant, double or "double" in kind or "dq" in kind.split("-"), note


def _flag(value: Any) -> bool:
    """A yes/no setting as written: true, or text that says so (_bool: "true", "yes", "1", "on", "enabled")."""
    return value is True or (isinstance(value, str) and _bool(value) is True)


# frameworks whose QLoRA recipe calls peft's prepare_model_for_kbit_training, which casts the
# non-quantized weights (embeddings, head, norms) to fp32 (peft/utils/other.py; GPTQ/AWQ models
# are left alone): the HF Trainer recipes, axolotl, and plain loops following peft's QLoRA guide
KBIT_PREP = frozenset({Framework.HF, Framework.AXOLOTL, Framework.PYTORCH})


_KBIT_PREP_SKIPS = ("aqlm", "eetq", "hqq", "torchao")   # peft leaves these (and GPTQ) uncast


def kbit_prep_fp32(case: dict, framework: Framework) -> bool:
    """Whether the case's QLoRA base keeps its non-quantized weights in fp32: a bitsandbytes-style
    4/8-bit base (not GPTQ/AWQ/int4, quant_of's note, nor a format peft skips) under a framework in
    KBIT_PREP. The one rule the memory and the time readers share."""
    quant, _, note = quant_of(case)
    named = text(case.get("quantization"))
    return bool(quant) and framework in KBIT_PREP and not note and not any(w in named for w in _KBIT_PREP_SKIPS)


_CLASS = re.compile(r"(\d+)\s*gb\b")


def gpu_of(case: dict) -> tuple[GpuSpec, str | None]:
    """The catalog GPU the case's `gpus.type` names (catalog.gpu_in_text: family, then form and memory
    words); when it names only a memory size ("80GB class"), a catalog GPU of that size (memory is
    what a memory case needs of it), with a note; else Skip."""
    raw = str((case.get("gpus") or {}).get("type") or "")
    low = raw.lower()
    named = catalog.gpu_in_text(raw)
    if named is not None:
        return named, None
    size = _CLASS.search(low)
    if size:
        gb = int(size.group(1))
        same = [g for g in catalog.load_gpus().values() if g.memory_bytes == gb * 10**9 and g.vendor == "NVIDIA"]
        if same:
            gpu = min(same, key=lambda g: (g.launch_year or 0, g.id))
            return gpu, f"GPU type not stated; a {gb} GB GPU ({gpu.id}) assumed for its capacity"
    if not raw.strip():
        raise Skip("GPU type not stated (gpus.type): the step's time depends on the GPU")
    why = catalog.gpu_lacking(raw)
    raise Skip(f"GPU {raw!r} not mapped" + (f": {why}" if why else ""))


# --- pipeline parallelism --------------------------------------------------------------------------

# Schedule names in a run's description: torch.distributed.pipelining's class names (torchtitan),
# Megatron's and the papers' words; the most specific first.
_SCHEDULES: tuple[tuple[str, PipeSchedule], ...] = (
    (r"zbv|zb-v\b|zero[- ]?bubble[- ]?v\b", PipeSchedule.ZBV),
    (r"dual[- ]?pipe", PipeSchedule.DUALPIPE),
    (r"interleaved[- ]?zero[- ]?bubble|zb-?h1\b", PipeSchedule.ZB_H1),
    (r"interleaved|looped[- ]?bfs", PipeSchedule.INTERLEAVED),
    (r"gpipe", PipeSchedule.GPIPE),
    (r"\b1f1b\b", PipeSchedule.ONE_F_ONE_B),
)
_LOOPED = frozenset({PipeSchedule.INTERLEAVED, PipeSchedule.ZB_H1})
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_ISO_DATE = re.compile(r"\b(20\d\d)[-/.](0?[1-9]|1[0-2])(?:[-/.](0?[1-9]|[12]\d|3[01]))?\b")
_MONTH_DATE = re.compile(r"\b(" + "|".join(_MONTHS) + r")[a-z]*\.?,?\s+(20\d\d)\b")
_END_OF_YEAR = re.compile(r"\bend of (20\d\d)\b")


def schedule_in_text(value: Any) -> PipeSchedule | None:
    """The pipeline schedule a description names ("Interleaved 1F1B", "ZBVZeroBubble", "GPipe"), or None."""
    low = text(value)
    return next((schedule for pattern, schedule in _SCHEDULES if re.search(pattern, low)), None)


def date_in_text(value: Any) -> str | None:
    """The latest date a description gives ("2024/12/26", "2025-04", "Dec 2024", "end of 2024") as
    "YYYY-MM-DD" or "YYYY-MM", or None: the software's date when a run names no version."""
    low = text(value)
    found = [f"{y}-{int(m):02d}" + (f"-{int(d):02d}" if d else "") for y, m, d in _ISO_DATE.findall(low)]
    found += [f"{y}-{_MONTHS.index(mon) + 1:02d}" for mon, y in _MONTH_DATE.findall(low)]
    found += [f"{y}-12" for y in _END_OF_YEAR.findall(low)]
    return max(found) if found else None


_VIRTUAL = re.compile(r"\b(?:vp|vpp|virtual[ _-]pipeline(?:[ _-]model[ _-]parallel)?(?:[ _-]size)?)\s*[=:]?\s*(\d+)", re.I)


def virtual_stages(par: dict) -> int:
    """Virtual pipeline stages per rank (interleaved 1F1B) as the case states them: a `vpp` field or
    "VP=5" / "virtual pipeline 4" in its parallel notes; 1 when not stated or "n/a"."""
    stated = par.get("vpp") or par.get("virtual_pipeline")
    if isinstance(stated, int) and stated > 0:
        return stated
    found = _VIRTUAL.search(str(par.get("other") or ""))
    return int(found.group(1)) if found and int(found.group(1)) > 0 else 1


def pipeline_of(case: dict, framework: Framework, pp: int, batch: int,
                accum: int) -> tuple[int, int, PipeSchedule | None, int, list[str]]:
    """(micro-batch, micro-batches per step, schedule, virtual stages per rank, notes) of a pipelined
    run. The schedule is the one the case names (None: the framework's). torchtitan reports the local
    batch, which its pipeline splits into microbatches by its default at the run's date
    (job/defaults/torchtitan.pp_microbatches), with 2 stages per rank for a looped schedule."""
    par = case.get("parallel") or {}
    words = " ".join(text(v) for v in par.values()) + " " + text(case.get("framework"))
    schedule = schedule_in_text(words)
    stages = virtual_stages(par)
    notes: list[str] = []
    if pp <= 1 or framework is not Framework.TORCHTITAN:
        return batch, accum, schedule, stages, notes
    if stages == 1 and schedule in _LOOPED:
        stages = titan.LOOPED_STAGES_PER_RANK
        notes.append(f"{schedule.value}: {stages} stages per rank (torchtitan's default for a looped schedule)")
    as_of = date_in_text(f"{case.get('framework')} {case.get('notes')}")
    n, why = titan.pp_microbatches(batch, pp, stages, as_of)
    notes.append(f"torchtitan pipeline: local batch {batch} as {n} microbatches of {batch // n} ({why}"
                 + (f"; run dated {as_of})" if as_of else ")"))
    return batch // n, accum * n, schedule, stages, notes
