"""A published case with its numbers and names written the way people write them, read as the schema's
values before it is mapped: "4k" tokens, "8" GPUs, "1,234.5" tokens/s, "45%" MFU, method "LoRA".

The development files write these as JSON numbers and lower-case names; a file from another writer may
not, and a number that arrives as text would otherwise make the case unpredictable (a setup refuses a
string batch size) or the whole accuracy run fail (a measured value divided as text). Each reading
that changed a value is returned as a note, so the report says what was read.

Rules (nothing else is guessed; a value that matches no rule is left as it was, to be refused where it
is used):
- counts and sizes (`seq_len`, `micro_batch`, `grad_accum`, `global_batch`, `gpus.count`, the
  `parallel` degrees, `lora.rank` / `lora.alpha`): an integer written as text, with thousands
  separators or spaces; `seq_len` may carry the k / M suffix of context lengths, binary as the
  sources use it ("4k" = 4,096, "32K" = 32,768, "1M" = 1,048,576 tokens); `micro_batch` may say it is
  per GPU ("4 per GPU", "8 samples/gpu") and `grad_accum` count steps ("8 steps");
- measured values: a number written as text, with thousands separators, a magnitude and a trailing unit word
  ("9.6 s", "1,234 tokens/s", "1.3M" GPU-hours, "850 ms" as a step time);
  a percentage ("45%") for `mfu` / `hfu` is the fraction 0.45; another name of
  a measured quantity (`step_time_ms`, `iter_time_s`, `tgs`, `mfu_percent`, `gpu_days`: cases.measured
  MEASURED_SYNONYMS) is its schema key in the schema's unit where the case gives no value under that key;
  samples/s is tokens/s at seq_len tokens a sample only where `seq_len_note` says the sequences are packed or
  of full length (cases/measured.py);
- `method`: the names frameworks and writers use for the schema's five, preference stages, DoRA and
  methods not modelled (cases.method_words);
- a LoRA case without a rank (or without a `lora` block) has rank 8, peft's LoraConfig default;
- a number field that says it is not known ("not stated", "n/a", "unknown", "none", "-") is the schema's null
  (`zero_stage` "none" / "no" / "off" is 0: no ZeRO);
- whole numbers written as floats (2.0), with a unit word ("2048 tokens", "8 GPUs") or with an aside ("2048
  (packed)") are integers;
- `gpus`: a text ("8x A100 80GB") is the type with its count; a count written into the type ("8x A100",
  "8 × H100", "2*A100", "A100 x 8") is the count when the case gives none; a count as nodes times GPUs ("8 nodes
  x 8 GPUs", "8x8") or with an aside ("64 (8 nodes)", "64 H100") is that count;
- `lora` written as its rank (8) or as text ("r=16, alpha=32, all-linear") is the schema's object; peft's and the
  trainers' key names for the schema's (`r`, `lora_r`, `lora_rank` -> rank;
  `lora_alpha` -> alpha; `lora_dropout` -> dropout; `target_modules`, `lora_target` -> targets);
- the `parallel` degrees written with their names ("TP=2", "PP8", "tensor parallel size 4", "Ulysses 8" for `sp`);
- the model block's numbers as text: the architecture's integers ("4096"), the size in billions ("7B", "6.7
  billion", "125M"); a size not stated is the one the model's name gives ("Acme-7B"; not "8x7B", not "A3B");
- the precision fields' PyTorch dtype names as the schema's words ("torch.bfloat16" as bf16, "float32" as fp32);
- `parallel.zero_stage`: DeepSpeed's stage as text ("ZeRO-3", "zero3", "stage 2", "ZeRO stage 3") is its number;
- a `parallel` block written as text ("DeepSpeed ZeRO-3", "TP=2, PP=4", "2-way TP", "FSDP + CPU offload") is the
  schema's object: the degrees, ZeRO stage, FSDP sharding, offload and ring attention its words name, the text as
  `other`;
- a `model` written as a name ("Llama-2-7B") is the model block with that name;
- a measured value written as an object of number and unit ({"value": 91.2, "unit": "s/step"}), or as the schema's
  reported_value / reported_unit pair with a time metric's unit ("tokens/s/GPU", "s/step", "TFLOPS", "MFU %",
  "GPU-hours"), is read under that metric's key (cases/measured.py);
Counts that the case's other numbers fix (a GPU count or micro-batch from the global batch) are filled
where the time reader maps the case (cases/timecase._filled).
"""

from __future__ import annotations

import copy
import re

from trainplan.cases.common import without_aside
from trainplan.cases.measured import number, read_measured
from trainplan.cases.method_words import read_method

INT_FIELDS = ("seq_len", "micro_batch", "grad_accum", "global_batch")
PARALLEL_FIELDS = ("zero_stage", "tp", "pp", "dp", "cp", "ep", "sp")
CONTEXT_SUFFIX = {"k": 1024, "m": 1024 ** 2}
_CONTEXT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM])\s*$")
# "8x A100", "8 × H100", "2*A100" (count first) or "A100 x 8" (count last)
_COUNT_FIRST = re.compile(r"^\s*(\d{1,5})\s*[x×*]\s*(?=\S)", re.IGNORECASE)
_COUNT_LAST = re.compile(r"\s+[x×*]\s*(\d{1,5})\s*$", re.IGNORECASE)
_ZERO = re.compile(r"^\s*(?:deepspeed[\s_-]*)?(?:zero[\s_-]*(?:stage)?|stage)[\s_-]*([0-3])\s*$", re.IGNORECASE)
LORA_KEYS = {"r": "rank", "lora_r": "rank", "lora_rank": "rank", "lora_alpha": "alpha", "lora_dropout": "dropout",
             "target_modules": "targets", "lora_target": "targets", "lora_target_modules": "targets"}

_UNIT_WORDS = re.compile(r"^(tokens?|gpus?|cards?|sequences?|samples?)$", re.IGNORECASE)
# the unit words a field's own meaning allows beside its number: a micro-batch is per GPU ("4 per GPU",
# "4 sequences per device", "8 samples/gpu"); gradient accumulation counts steps ("8 steps", "8 micro-batches")
FIELD_UNITS = {
    "micro_batch": re.compile(r"^(?:(?:sequences?|samples?)\s*)?(?:per|/|a|each)\s*(?:gpu|device|rank|card)$",
                              re.IGNORECASE),
    "grad_accum": re.compile(r"^(?:(?:accumulation|accum)\s*)?(?:steps?|micro[\s-]?batch(?:es)?)$", re.IGNORECASE),
}
# a parallel degree written with its own name: "TP=2", "tp 2", "PP8", "tensor parallel size 4", "Ulysses 8" (sp: a
# number there is the Ulysses degree)
_DEGREE_NAMES = {"tp": "tp|tensor", "pp": "pp|pipeline", "cp": "cp|context", "ep": "ep|expert", "dp": "dp|data",
                 "sp": "sp|ulysses|sequence"}
_DEGREE_BODY = r"(?:{names})(?:[\s_-]*parallel(?:ism)?)?(?:[\s_-]*(?:size|degree))?\s*[=:_-]?\s*(\d{{1,5}})"
_DEGREE = {key: re.compile(r"^\s*" + _DEGREE_BODY.format(names=names) + r"\s*$", re.IGNORECASE)
           for key, names in _DEGREE_NAMES.items()}
# PyTorch's dtype names for the schema's precision words (torch.bfloat16 is bf16), in the precision fields
_DTYPE_NAMES = ((re.compile(r"(?<![a-z0-9])(?:torch\.)?bfloat16(?![a-z0-9])", re.IGNORECASE), "bf16"),
                (re.compile(r"(?<![a-z0-9])(?:torch\.)?float16(?![a-z0-9])", re.IGNORECASE), "fp16"),
                (re.compile(r"(?<![a-z0-9])(?:torch\.)?float32(?![a-z0-9])", re.IGNORECASE), "fp32"),
                (re.compile(r"(?<![a-z0-9])(?:torch\.)?float8(?:_e4m3fnu?z?|_e5m2f?n?u?z?)?(?![a-z0-9])",
                            re.IGNORECASE), "fp8"))


# a number field that says it is not known: the schema's null ("null when unknown")
_UNSTATED = re.compile(r"^\s*(?:not (?:stated|given|known|specified|reported|shown)|n/?a|unknown|unspecified|null|nil|"
                       r"none|tbd|\?+|-+|—)\s*(?:\(.*\))?\s*$", re.IGNORECASE)
_NO = re.compile(r"^\s*(?:none|no|off|false|disabled|without|no zero)\s*$", re.IGNORECASE)


def _integer(value: object, *, context: bool = False, units: re.Pattern | None = None) -> int | None:
    """An integer written as text ("8", "4,096", "2048 tokens"; with `context`, "4k", "1M"; with `units`, the
    unit words a field allows: FIELD_UNITS) or as a whole float (2.0); None otherwise."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, str):
        return None
    value = without_aside(value)        # "2048 (packed)": the aside says how, not how many
    if context and (m := _CONTEXT.match(value)):
        n = float(m.group(1)) * CONTEXT_SUFFIX[m.group(2).lower()]
        return int(n) if n.is_integer() else None
    got = number(value)
    if got is None or not got[0].is_integer():
        return None
    if got[1] and not _UNIT_WORDS.match(got[1]) and not (units and units.match(got[1])):
        return None
    return int(got[0])


def normalized(case: dict) -> tuple[dict, list[str]]:
    """The case with the readings above applied (a copy; the input is left as it was) and a note per
    value read from text."""
    out = copy.deepcopy(case)
    notes: list[str] = []
    _parallel_text(out, notes)

    def read(holder: dict, key: str, where: str, *, context: bool = False) -> None:
        value = holder.get(key)
        if isinstance(value, str) and key == "zero_stage" and _NO.match(value):
            notes.append(f"{where} {value!r} read as 0 (no ZeRO)")
            holder[key] = 0
            return
        if isinstance(value, str) and _UNSTATED.match(value):
            notes.append(f"{where} {value!r} read as not stated")
            holder[key] = None
            return
        got = _integer(value, context=context, units=FIELD_UNITS.get(key))
        if got is not None:
            notes.append(f"{where} {holder[key]!r} read as {got}")
            holder[key] = got

    for key in INT_FIELDS:
        read(out, key, key, context=key == "seq_len")
    for block, keys in (("gpus", ("count",)), ("parallel", PARALLEL_FIELDS)):
        inner = out.get(block)
        if isinstance(inner, dict):
            for key in keys:
                read(inner, key, f"{block}.{key}")
    parallel = out.get("parallel")
    if isinstance(parallel, dict):
        for key, pattern in _DEGREE.items():
            if isinstance(parallel.get(key), str) and (m := pattern.match(parallel[key])):
                notes.append(f"parallel.{key} {parallel[key]!r} read as {m.group(1)}")
                parallel[key] = int(m.group(1))
    _precision(out, notes)
    measured = out.get("measured")
    if isinstance(measured, dict):
        read_measured(out, measured, notes)
    _gpus(out, notes)
    _model(out, notes)
    read_method(out, notes)
    _lora(out, notes)
    parallel = out.get("parallel")
    if isinstance(parallel, dict) and isinstance(parallel.get("zero_stage"), str):
        if m := _ZERO.match(parallel["zero_stage"]):
            notes.append(f"parallel.zero_stage {parallel['zero_stage']!r} read as {m.group(1)}")
            parallel["zero_stage"] = int(m.group(1))
    return out, notes


MODEL_INT_FIELDS = ("layers", "hidden", "heads", "kv_heads", "intermediate", "vocab")
# a size in billions as people write it: "7B", "6.7 billion", "~7B", "7b (dense)"; millions ("125M") as billions
_SIZE = re.compile(r"^\s*[~≈]?\s*(\d+(?:\.\d+)?)\s*(b|bn|billion|m|million)?\b", re.IGNORECASE)
# the one size a model's name gives ("Acme-7B-chat"); not an MoE's ("8x7B") nor an active share ("A3B")
_ACTIVE_SIZE = re.compile(r"(?<![a-z0-9])a\d+(?:\.\d+)?b(?![a-z0-9])", re.IGNORECASE)     # MoE's "A3B"
_NAME_SIZE = re.compile(r"(?<![a-z0-9.x])(\d+(?:\.\d+)?)b(?![a-z0-9])", re.IGNORECASE)


def _billions(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    m = _SIZE.match(without_aside(value)) if isinstance(value, str) else None
    if not m:
        return None
    return float(m.group(1)) / (1000.0 if (m.group(2) or "b").lower().startswith("m") else 1.0)


def _model(case: dict, notes: list[str]) -> None:
    """The model block's numbers written as text: the architecture's integers ("4096"), the size in billions
    ("7B", "6.7 billion"); a size not stated is the one the name gives ("Acme-7B"), where it gives one."""
    model = case.get("model")
    if isinstance(model, str) and model.strip():
        notes.append(f"model {model!r} read as the model's name")
        model = case["model"] = {"name": model.strip()}
    if not isinstance(model, dict):
        return
    for key in MODEL_INT_FIELDS:
        got = _integer(model.get(key))
        if got is not None:
            notes.append(f"model.{key} {model[key]!r} read as {got}")
            model[key] = got
    for holder, key, where in ((model, "params_b", "model.params_b"),
                               (model.get("moe"), "active_params_b", "model.moe.active_params_b")):
        if isinstance(holder, dict) and isinstance(holder.get(key), str) and (got := _billions(holder[key])):
            notes.append(f"{where} {holder[key]!r} read as {got:g}")
            holder[key] = got
    name = str(model.get("name") or "")
    named = _NAME_SIZE.findall(name)
    if model.get("params_b") is None and len(named) == 1 and not model.get("moe") and not _ACTIVE_SIZE.search(name):
        model["params_b"] = float(named[0])
        notes.append(f"model.params_b not stated: {float(named[0]):g}, the size the name {model['name']!r} gives")


def _precision(case: dict, notes: list[str]) -> None:
    """PyTorch's dtype names in the precision fields read as the schema's words ("torch.bfloat16" as bf16)."""
    prec = case.get("precision")
    holder, keys = (case, ("precision",)) if isinstance(prec, str) else \
        (prec, tuple(k for k, v in prec.items() if isinstance(v, str))) if isinstance(prec, dict) else (None, ())
    for key in keys:
        value = holder[key]
        for pattern, word in _DTYPE_NAMES:
            if word not in value.lower():       # "bf16 (bit: bfloat16)" says it already
                value = pattern.sub(word, value)
        if value != holder[key]:
            notes.append(f"precision {holder[key]!r} read as {value!r}")
            holder[key] = value


# a `parallel` block written as text ("DeepSpeed ZeRO-3", "TP=2, PP=4", "FSDP + CPU offload"): the degrees, the ZeRO
# stage, FSDP, offload and ring attention its words name, the text itself as `other`
_TEXT_DEGREE = {key: re.compile(r"(?<![a-z0-9])" + _DEGREE_BODY.format(names=names) + r"(?![0-9])", re.IGNORECASE)
                for key, names in _DEGREE_NAMES.items()}
_WAY = {key: re.compile(rf"(?<![0-9])(\d{{1,5}})[\s-]*way[\s_-]*(?:{names})(?![a-z])", re.IGNORECASE)
        for key, names in _DEGREE_NAMES.items()}      # "2-way TP"
_TEXT_ZERO = re.compile(r"(?<![a-z0-9])zero[\s_-]*(?:stage[\s_-]*)?([0-3])(?![0-9])", re.IGNORECASE)
_TEXT_FSDP = (("HYBRID_SHARD", re.compile(r"hybrid[\s_-]*shard", re.IGNORECASE)),
              ("SHARD_GRAD_OP", re.compile(r"shard[\s_-]*grad[\s_-]*op", re.IGNORECASE)),
              ("FULL_SHARD", re.compile(r"(?<![a-z0-9])fsdp|fully[\s_-]*sharded", re.IGNORECASE)))


def _parallel_text(case: dict, notes: list[str]) -> None:
    written = case.get("parallel")
    if not isinstance(written, str) or not written.strip():
        return
    block: dict = {"other": written}
    for key, pattern in _TEXT_DEGREE.items():
        if m := pattern.search(written) or _WAY[key].search(written):
            block[key] = int(m.group(1))
    if m := _TEXT_ZERO.search(written):
        block["zero_stage"] = int(m.group(1))
    fsdp = next((name for name, pattern in _TEXT_FSDP if pattern.search(written)), None)
    if fsdp:
        block["fsdp"] = fsdp
    if re.search(r"offload|infinity", written, re.IGNORECASE):
        block["offload"] = written
    if re.search(r"\bring\b", written, re.IGNORECASE) and "sp" not in block:
        block["sp"] = written
    notes.append(f"parallel {written!r} read as {block}")
    case["parallel"] = block


# a GPU count as nodes times GPUs a node ("8 nodes x 8 GPUs", "8x8", "2 nodes of 8"), or with an aside ("64 (8
# nodes)") or the GPU's name ("64 H100") after it; a count of nodes alone ("8 nodes") says no GPU count
_NODES_X_GPUS = re.compile(r"^\s*(\d{1,5})\s*(?:nodes?|hosts?|machines?|servers?)?\s*(?:[x×*]|of)\s*(\d{1,3})\s*"
                           r"(?:gpus?|cards?|devices?)?\s*(?:each|per node|/node|a node)?\s*$", re.IGNORECASE)
_NODE_WORDS = re.compile(r"\b(?:nodes?|hosts?|machines?|servers?)\b", re.IGNORECASE)


def _gpu_count(text: str) -> int | None:
    """The GPU count a `gpus.count` text gives (_NODES_X_GPUS), else None."""
    if m := _NODES_X_GPUS.match(text):
        return int(m.group(1)) * int(m.group(2)) or None
    got = number(without_aside(text))
    if got is None or not got[0].is_integer() or got[0] < 1 or _NODE_WORDS.search(got[1]):
        return None
    return int(got[0])


def _gpus(case: dict, notes: list[str]) -> None:
    gpus = case.get("gpus")
    if isinstance(gpus, str):
        notes.append(f"gpus {gpus!r} read as the GPU type")
        gpus = case["gpus"] = {"type": gpus, "count": None}
    if isinstance(gpus, dict) and isinstance(gpus.get("count"), str) and (n := _gpu_count(gpus["count"])):
        notes.append(f"gpus.count {gpus['count']!r} read as {n}")
        gpus["count"] = n
    if not isinstance(gpus, dict) or gpus.get("count") or not isinstance(gpus.get("type"), str):
        return
    raw = gpus["type"]
    m = _COUNT_FIRST.match(raw) or _COUNT_LAST.search(raw)
    if m and int(m.group(1)) > 0:
        gpus["count"] = int(m.group(1))
        gpus["type"] = (raw[:m.start()] + raw[m.end():]).strip()
        notes.append(f"gpus.type {raw!r} read as {gpus['count']} x {gpus['type']}")


_LORA_KEY = re.compile(r"^\s*(?:lora[_ ]?)?(?:rank|alpha|r)(?![a-z])\s*[=:-]?\s*", re.IGNORECASE)
# A LoRA rank not stated: 8, peft's LoraConfig.r default (src/peft/tuners/lora/config.py), LLaMA-Factory's
# lora_rank (src/llamafactory/hparams/finetuning_args.py) and ms-swift's (swift/arguments/tuner_args.py)
DEFAULT_LORA_RANK = 8


_LORA_TEXT = {"rank": re.compile(r"\b(?:lora[_ ]?)?(?:rank|r)\s*[=:]?\s*(\d{1,5})\b", re.IGNORECASE),
              "alpha": re.compile(r"\b(?:lora[_ ]?)?alpha\s*[=:]?\s*(\d{1,5})\b", re.IGNORECASE),
              "dropout": re.compile(r"\b(?:lora[_ ]?)?dropout\s*[=:]?\s*(\d*\.\d+|0|1)\b", re.IGNORECASE)}
_ALL_LINEAR = re.compile(r"\ball(?:[ _-]linear)?\b", re.IGNORECASE)


def _lora_block(value: object) -> dict | None:
    """A LoRA block written as its rank (8) or as text ("r=16, alpha=32, all-linear"), as the schema's object."""
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return {"rank": value}
    if not isinstance(value, str):
        return None
    block: dict = {}
    for key, pattern in _LORA_TEXT.items():
        if m := pattern.search(value):
            block[key] = float(m.group(1)) if key == "dropout" else int(m.group(1))
    if "rank" not in block and (only := _integer(value)):
        block["rank"] = only
    if _ALL_LINEAR.search(value):
        block["targets"] = "all-linear"
    return block


def _lora(case: dict, notes: list[str]) -> None:
    lora = case.get("lora")
    if lora is None and case.get("method") in ("lora", "qlora"):
        lora = case["lora"] = {}
    if not isinstance(lora, dict) and lora is not None and (block := _lora_block(lora)) is not None:
        notes.append(f"lora {lora!r} read as {block}")
        lora = case["lora"] = block
    if not isinstance(lora, dict):
        return
    for key, name in LORA_KEYS.items():
        if key in lora and name not in lora:
            notes.append(f"lora.{key} read as lora.{name}")
            lora[name] = lora.pop(key)
    for key in ("rank", "alpha"):
        value = lora.get(key)       # "r=16", "rank 16", "lora_alpha: 32": the key written with its value
        got = _integer(_LORA_KEY.sub("", value) if isinstance(value, str) else value)
        if got is not None:
            notes.append(f"lora.{key} {lora[key]!r} read as {got}")
            lora[key] = got
    if lora.get("rank") is None and case.get("method") in ("lora", "qlora"):
        lora["rank"] = DEFAULT_LORA_RANK
        notes.append(f"LoRA rank not given: {DEFAULT_LORA_RANK}, the default of peft's LoraConfig (and of "
                     "LLaMA-Factory's and ms-swift's lora_rank)")
