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
- measured values: a number written as text, with thousands separators and a trailing unit word
  ("9.6 s", "1,234 tokens/s"); a percentage ("45%") for `mfu` / `hfu` is the fraction 0.45; another name of
  a measured quantity (`step_time_ms`, `iter_time_s`, `tgs`, `mfu_percent`, `gpu_days`: cases.measured
  MEASURED_SYNONYMS) is its schema key in the schema's unit where the case gives no value under that key;
  samples/s is tokens/s at seq_len tokens a sample only where `seq_len_note` says the sequences are packed or
  of full length (cases/measured.py);
- `method`: lower case, and the names frameworks use for the schema's five: "sft", "full-parameter",
  "full fine-tune" (full), "pre-training", "continued pretraining" (pretrain), "q-lora" (qlora), and any of
  these names with words beside it that say nothing more about the method ("LoRA fine-tuning", "lora (PEFT)",
  "full parameter SFT", "pretraining (from scratch)"; QLoRA's 4-bit base: "QLoRA (4-bit)", "4-bit LoRA"); peft's
  LoRA under another name (rsLoRA, PiSSA, OLoRA, LoftQ, LoRA+, LoRA-GA: the same adapters, only their
  initialisation, scaling or learning rates differ, LORA_VARIANTS) is lora (qlora over 4-bit weights); a
  preference stage trainplan times (DPO, IPO, KTO, ORPO, SimPO, CPO, a reward model: `--stage`,
  job.setup.STAGES) named in the method ("DPO", "LoRA DPO", "full-parameter ORPO") or by its trainer in
  the framework text (TRL's DPOTrainer, LLaMA-Factory's `stage: dpo`, ms-swift's `rlhf_type dpo`) is that
  stage, with the method the rest of the text (or the `lora` block) names; DoRA ("DoRA", "QDoRA", "LoRA +
  DoRA") is LoRA (QLoRA) with peft's use_dora, the case's `dora`; a method outside these (IA3, prefix
  tuning, PPO, GRPO and other rollout-based RL, ...) is refused with what is not modelled
  (`method_not_modelled`, applied by cases.map_case);
- a LoRA case without a rank (or without a `lora` block) has rank 8, peft's LoraConfig default;
- whole numbers written as floats (2.0) or with a unit word ("2048 tokens", "8 GPUs") are integers;
- `gpus`: a text ("8x A100 80GB") is the type with its count; a count written into the type ("8x A100",
  "8 × H100", "2*A100", "A100 x 8") is the count when the case gives none;
- `lora`: peft's and the trainers' key names for the schema's (`r`, `lora_r`, `lora_rank` -> rank;
  `lora_alpha` -> alpha; `lora_dropout` -> dropout; `target_modules`, `lora_target` -> targets);
- `parallel.zero_stage`: DeepSpeed's stage as text ("ZeRO-3", "zero3", "stage 2", "ZeRO stage 3") is its number;
- a missing `method` (`with_method`, applied to a whole case by cases.map_case) is "lora" when the case
  has a `lora` block with a rank ("qlora" when its `quantization` is 4-bit), else "full": the schema's
  method without an adapter.
Counts that the case's other numbers fix (a GPU count or micro-batch from the global batch) are filled
where the time reader maps the case (cases/timecase._filled).
"""

from __future__ import annotations

import copy
import re

from trainplan.cases.measured import number, read_measured

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

METHOD_NAMES = {
    "full": "full", "sft": "full", "fft": "full", "full-parameter": "full", "full parameter": "full",
    "full-finetune": "full", "full finetune": "full", "full fine-tune": "full", "full-fine-tune": "full",
    "full fine-tuning": "full", "full-ft": "full", "full_ft": "full", "full_finetune": "full",
    "pretrain": "pretrain", "pre-train": "pretrain", "pretraining": "pretrain", "pre-training": "pretrain",
    "lora": "lora", "qlora": "qlora", "q-lora": "qlora", "freeze": "freeze",
    "full sft": "full", "full-sft": "full", "full finetuning": "full", "full fine tuning": "full",
    "full-parameter fine-tuning": "full", "full parameter fine-tuning": "full", "full-parameter sft": "full",
    "continued pretraining": "pretrain", "continued pre-training": "pretrain", "continual pretraining": "pretrain",
    "continual pre-training": "pretrain", "lora sft": "lora", "qlora sft": "qlora",
}
# peft's LoRA under another name: the same adapters, forward and backward; only their initialisation
# (LoraConfig.init_lora_weights: "pissa", "olora", "loftq", "eva", "corda"; LoRA-GA's gradient init), their
# scaling (LoraConfig.use_rslora: alpha / sqrt(r) in LoraLayer.update_layer) or their learning rates
# (LoRA+: LLaMA-Factory loraplus_lr_ratio, a second optimizer parameter group) differ, which a step's time
# and memory do not see (peft src/peft/tuners/lora/config.py, layer.py). Over 4-bit weights: qlora.
LORA_VARIANTS = frozenset({"rslora", "rs-lora", "rs_lora", "pissa", "olora", "loftq", "lora+", "loraplus",
                           "lora-plus", "lora_plus", "lora-ga", "lora_ga", "eva", "corda"})
# "GaLore", "full + GaLore", "BAdam": full fine-tuning with the optimizer of that name
_OPTIMIZER_METHOD = re.compile(r"^(?:full[ +_-]*)?(galore|badam)(?:[ +_-]*full)?$")
# methods the schema's five do not cover: refused with what is missing, not as a malformed field
NOT_MODELLED: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"^(ia3|\(ia\)\^?3|prefix[ _-]?tuning|p[ _-]?tuning(?: ?v2)?|prompt[ _-]?tuning|adalora|vera|oft|"
                r"boft|lokr|loha|fourierft|hra|bone|ln[ _-]?tuning|longlora|lisa)$"),
     "an adapter or training method other than LoRA, full or freeze: its extra work is not modelled"),
    (re.compile(r"\b(ppo|grpo|rlhf|rloo|dapo|gspo|reinforce(?:\+\+)?)\b"),
     "RL training with rollouts (generation, reward and value models) is not modelled"),
)
# Preference stages the estimate times (job.setup.STAGES, `--stage`): the word in a method, and the trainer
# that runs it in a framework text (TRL trl/trainer/{dpo,kto,orpo,cpo,reward}_trainer.py; LLaMA-Factory
# FinetuningArguments.stage: pt, sft, rm, ppo, dpo, kto; ms-swift RLHFArguments.rlhf_type: dpo, orpo, simpo,
# kto, cpo, rm, ppo, grpo). SimPO runs in TRL as CPOTrainer(loss_type="simpo").
_STAGE_WORD = re.compile(r"\b(dpo|ipo|kto|orpo|simpo|cpo|rm|reward[ _-]?model(?:ing)?)\b")
_STAGE_TRAINER = re.compile(r"\b(dpo|kto|orpo|cpo|reward)trainer\b"
                            r"|\b(?:stage|rlhf_type)\b\W{0,4}(dpo|kto|orpo|simpo|cpo|rm)\b")
_UNIT_WORDS = re.compile(r"^(tokens?|gpus?|cards?|sequences?|samples?)$", re.IGNORECASE)
# the unit words a field's own meaning allows beside its number: a micro-batch is per GPU ("4 per GPU",
# "4 sequences per device", "8 samples/gpu"); gradient accumulation counts steps ("8 steps", "8 micro-batches")
FIELD_UNITS = {
    "micro_batch": re.compile(r"^(?:(?:sequences?|samples?)\s*)?(?:per|/|a|each)\s*(?:gpu|device|rank|card)$",
                              re.IGNORECASE),
    "grad_accum": re.compile(r"^(?:(?:accumulation|accum)\s*)?(?:steps?|micro[\s-]?batch(?:es)?)$", re.IGNORECASE),
}
# A method written with words beside its name that say nothing more about it: what kind of run it is ("LoRA
# fine-tuning", "full parameter SFT"), the library the adapters come from ("lora (PEFT)"), where the run starts
# ("pretraining (from scratch)"), and QLoRA's 4-bit base said again ("QLoRA (4-bit)", "qlora nf4", "4-bit LoRA").
# Only a text whose other words are all of these reads as its method (`_method_in_words`); any other word leaves
# it as written, to be refused where it is read.
_METHOD_WORDS = frozenset({"full", "lora", "qlora", "freeze", "pretrain"})
_METHOD_FILLER = frozenset({"fine", "tune", "tuning", "tuned", "finetune", "finetuning", "ft", "sft", "supervised",
                            "instruction", "peft", "training", "train", "from", "scratch", "parameter", "parameters",
                            "param", "params", "weights", "adapter", "adapters", "continued", "continual", "the", "of",
                            "with", "w", "using", "via"})
_BASE_4BIT = frozenset({"4bit", "nf4", "int4", "fp4", "bnb", "bitsandbytes"})


def _integer(value: object, *, context: bool = False, units: re.Pattern | None = None) -> int | None:
    """An integer written as text ("8", "4,096", "2048 tokens"; with `context`, "4k", "1M"; with `units`, the
    unit words a field allows: FIELD_UNITS) or as a whole float (2.0); None otherwise."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if not isinstance(value, str):
        return None
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

    def read(holder: dict, key: str, where: str, *, context: bool = False) -> None:
        got = _integer(holder.get(key), context=context, units=FIELD_UNITS.get(key))
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
    measured = out.get("measured")
    if isinstance(measured, dict):
        read_measured(out, measured, notes)
    _gpus(out, notes)
    _method(out, notes)
    _lora(out, notes)
    parallel = out.get("parallel")
    if isinstance(parallel, dict) and isinstance(parallel.get("zero_stage"), str):
        if m := _ZERO.match(parallel["zero_stage"]):
            notes.append(f"parallel.zero_stage {parallel['zero_stage']!r} read as {m.group(1)}")
            parallel["zero_stage"] = int(m.group(1))
    return out, notes


_DORA = re.compile(r"(?<![a-z])(q?)dora(?![a-z])")
_FILLER = frozenset({"with", "w", "using", "via", "training", "train", "trainer", "stage"})


def _other_words(low: str, match: re.Match) -> list[str]:
    """The words of a lower-cased method outside `match`, separators and filler words dropped."""
    words = re.sub(r"[\s(),_/+-]+", " ", low[:match.start()] + " " + low[match.end():]).split()
    return [w for w in words if w not in _FILLER]


def _stage_name(word: str) -> str:
    """The `--stage` name of a preference word: a reward model is rm, CPOTrainer's SimPO stays simpo."""
    return "rm" if word.startswith("reward") else word


def _stage(case: dict, notes: list[str]) -> None:
    """A preference stage named in the method or by its trainer in the framework text (module docstring):
    set as the case's `stage`, the method left to what the rest of its text names (None when nothing:
    `with_method` then reads the `lora` block)."""
    method = case.get("method")
    low = method.strip().lower() if isinstance(method, str) else ""
    if m := _STAGE_WORD.search(low):
        rest = " ".join(_other_words(low, m))
        stage = _stage_name(m.group(1))
        case["stage"], case["method"] = stage, rest or None
        notes.append(f"method {method!r} read as the {stage} stage" + (f" of method {rest!r}" if rest else ""))
        return
    framework = case.get("framework")
    if isinstance(framework, str) and (t := _STAGE_TRAINER.search(framework.lower())):
        stage = _stage_name(t.group(1) or t.group(2))
        case["stage"] = stage
        notes.append(f"framework {framework!r:.80} runs the {stage} stage")


def _dora(case: dict, notes: list[str]) -> None:
    """DoRA named in the method ("DoRA", "QDoRA", "LoRA + DoRA"): peft's LoRA with use_dora (memory.dora),
    the case's `dora` set and the method left as LoRA (QLoRA for QDoRA or over 4-bit weights). A LoRA case
    whose `lora` block says use_dora (peft LoraConfig's field, LLaMA-Factory's and ms-swift's `use_dora`,
    axolotl's `peft_use_dora`) or whose framework text sets it is DoRA as well."""
    method = case.get("method")
    low = method.lower() if isinstance(method, str) else ""
    if not (m := _DORA.search(low)):
        if (said := _use_dora(case)) and (low in ("lora", "qlora") or (not low and case.get("lora"))):
            case["dora"] = True
            notes.append(f"{said} read as DoRA (peft use_dora)")
        return
    words = [w for w in _other_words(low, m) if w != "lora"]
    four_bit = m.group(1) == "q" or "qlora" in words or _FOUR_BIT.search(str(case.get("quantization") or ""))
    if [w for w in words if w != "qlora"]:
        return                              # something else named beside it: left to be refused
    case["dora"], case["method"] = True, "qlora" if four_bit else "lora"
    notes.append(f"method {method!r} read as {case['method']} with DoRA (peft use_dora)")


_USE_DORA_TEXT = re.compile(r"use_dora(?:\s*[=:]\s*|\s+)true", re.IGNORECASE)


def _use_dora(case: dict) -> str | None:
    """Where a case sets peft's use_dora: its `lora` block (use_dora, peft_use_dora, dora) or its framework text
    (`use_dora: true`, `--use_dora True`, `use_dora=True`); None when it does not."""
    lora = case.get("lora")
    if isinstance(lora, dict):
        for key in ("use_dora", "peft_use_dora", "dora"):
            if lora.get(key) is True or str(lora.get(key)).strip().lower() == "true":
                return f"lora.{key} {lora[key]!r}"
    framework = case.get("framework")
    if isinstance(framework, str) and (t := _USE_DORA_TEXT.search(framework)):
        return f"framework text {t.group(0)!r}"
    return None


def _method(case: dict, notes: list[str]) -> None:
    _stage(case, notes)
    _dora(case, notes)
    method = case.get("method")
    if not isinstance(method, str):
        return
    low = re.sub(r"\s+", " ", method.strip().lower())
    name = METHOD_NAMES.get(low)
    if name is not None and name != method:
        notes.append(f"method {method!r} read as {name}")
        case["method"] = name
    elif m := _OPTIMIZER_METHOD.match(low):
        # a full fine-tune whose optimizer the method names (GaLore, BAdam: trainplan's optimizers of that name)
        word = m.group(1)
        optimizer = str(case.get("optimizer") or "")
        if word not in optimizer.lower():
            case["optimizer"] = f"{'GaLore' if word == 'galore' else 'BAdam'} {optimizer}".strip()
        notes.append(f"method {method!r} read as full with the optimizer {case['optimizer']!r}")
        case["method"] = "full"
    elif low in LORA_VARIANTS:
        name = "qlora" if _FOUR_BIT.search(str(case.get("quantization") or "")) else "lora"
        notes.append(f"method {method!r} read as {name}: peft's LoRA adapters, forward and backward; only their "
                     "initialisation, scaling or learning rates differ, which time and memory do not see")
        case["method"] = name
    elif name is None and (name := _method_in_words(low)) is not None:
        notes.append(f"method {method!r} read as {name} (its other words say nothing more about the method)")
        case["method"] = name


def _method_in_words(low: str) -> str | None:
    """The schema's method a lower-cased method text names with only filler words beside it (_METHOD_FILLER;
    a 4-bit base beside LoRA or QLoRA is QLoRA; "full" beside pre-training is pre-training); None otherwise."""
    text = re.sub(r"(?<![\d.])4[\s-]*bits?", " 4bit ", low)
    text = re.sub(r"\bpre[\s-]?train(?:ing|ed)?\b", " pretrain ", text)
    words = [w for w in re.split(r"[^a-z0-9]+", text) if w and w not in _METHOD_FILLER]
    named = {w for w in words if w in _METHOD_WORDS}
    if named == {"full", "pretrain"}:
        named = {"pretrain"}
    if len(named) != 1 or any(w not in _METHOD_WORDS and w not in _BASE_4BIT for w in words):
        return None
    name = named.pop()
    if any(w in _BASE_4BIT for w in words):
        return "qlora" if name in ("lora", "qlora") else None
    return name


def method_not_modelled(method: object) -> str | None:
    """Why a case's method (after `normalized`) cannot be scored, for the methods NOT_MODELLED names;
    None for any other value (the schema's own, or one refused where it is read)."""
    if not isinstance(method, str):
        return None
    low = method.strip().lower()
    for pattern, why in NOT_MODELLED:
        if pattern.search(low):
            return f"method {method!r}: {why}"
    return None


def _gpus(case: dict, notes: list[str]) -> None:
    gpus = case.get("gpus")
    if isinstance(gpus, str):
        notes.append(f"gpus {gpus!r} read as the GPU type")
        gpus = case["gpus"] = {"type": gpus, "count": None}
    if not isinstance(gpus, dict) or gpus.get("count") or not isinstance(gpus.get("type"), str):
        return
    raw = gpus["type"]
    m = _COUNT_FIRST.match(raw) or _COUNT_LAST.search(raw)
    if m and int(m.group(1)) > 0:
        gpus["count"] = int(m.group(1))
        gpus["type"] = (raw[:m.start()] + raw[m.end():]).strip()
        notes.append(f"gpus.type {raw!r} read as {gpus['count']} x {gpus['type']}")


# A LoRA rank not stated: 8, peft's LoraConfig.r default (src/peft/tuners/lora/config.py), LLaMA-Factory's
# lora_rank (src/llamafactory/hparams/finetuning_args.py) and ms-swift's (swift/arguments/tuner_args.py)
DEFAULT_LORA_RANK = 8


def _lora(case: dict, notes: list[str]) -> None:
    lora = case.get("lora")
    if lora is None and case.get("method") in ("lora", "qlora"):
        lora = case["lora"] = {}
    if not isinstance(lora, dict):
        return
    for key, name in LORA_KEYS.items():
        if key in lora and name not in lora:
            notes.append(f"lora.{key} read as lora.{name}")
            lora[name] = lora.pop(key)
    for key in ("rank", "alpha"):
        got = _integer(lora.get(key))
        if got is not None:
            notes.append(f"lora.{key} {lora[key]!r} read as {got}")
            lora[key] = got
    if lora.get("rank") is None and case.get("method") in ("lora", "qlora"):
        lora["rank"] = DEFAULT_LORA_RANK
        notes.append(f"LoRA rank not given: {DEFAULT_LORA_RANK}, the default of peft's LoraConfig (and of "
                     "LLaMA-Factory's and ms-swift's lora_rank)")


_FOUR_BIT = re.compile(r"(?<![\d.])4[\s-]*bit|\bnf4\b|\bint4\b|\bfp4\b|\bbits\W*4\b", re.IGNORECASE)


def with_method(case: dict) -> tuple[dict, list[str]]:
    """The case with a method when it states none (module docstring), and the note saying so."""
    if case.get("method") is not None:
        return case, []
    notes: list[str] = []
    case = dict(case)
    lora = case.get("lora")
    if isinstance(lora, dict) and lora.get("rank"):
        four_bit = bool(_FOUR_BIT.search(str(case.get("quantization") or "")))
        case["method"] = "qlora" if four_bit else "lora"
        notes.append(f"method not given: read as {case['method']} (a LoRA block"
                     f"{' over 4-bit weights' if four_bit else ''})")
    elif not lora:
        case["method"] = "full"
        notes.append("method not given: read as full (no adapter)")
    return case, notes
