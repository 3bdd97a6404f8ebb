"""A published case's method as writers name it, read as the schema's five (full, lora, qlora, freeze,
pretrain), before the case is mapped (cases.normalize applies `read_method`; cases.map_case applies
`with_method` and refuses what `method_not_modelled` names).

Rules (nothing else is guessed; a method that matches no rule is left as it was, to be refused where it is read):
- lower case, and the names frameworks use for the schema's five: "sft", "full-parameter",
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
- a missing `method` (`with_method`, applied to a whole case by cases.map_case) is "lora" when the case
  has a `lora` block with a rank ("qlora" when its `quantization` is 4-bit), else "full": the schema's
  method without an adapter.
"""

from __future__ import annotations

import re

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
        return
    words = [w for w in _other_words(low, m) if w != "lora"]
    four_bit = m.group(1) == "q" or "qlora" in words or _FOUR_BIT.search(str(case.get("quantization") or ""))
    if [w for w in words if w != "qlora"]:
        return                              # something else named beside it: left to be refused
    case["dora"], case["method"] = True, "qlora" if four_bit else "lora"
    notes.append(f"method {method!r} read as {case['method']} with DoRA (peft use_dora)")


_USE_DORA_TEXT = re.compile(r"use_dora(?:\s*[=:]\s*|\s+)true", re.IGNORECASE)


def _lora_says_dora(case: dict, notes: list[str]) -> None:
    """A LoRA or QLoRA case (its method as read_method reads it, or none beside a `lora` block) whose `lora`
    block or framework text sets peft's use_dora is DoRA (_dora's docstring)."""
    method = case.get("method")
    if (said := _use_dora(case)) and (method in ("lora", "qlora") or (method is None and case.get("lora"))):
        case["dora"] = True
        notes.append(f"{said} read as DoRA (peft use_dora)")


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


def read_method(case: dict, notes: list[str]) -> None:
    """The case's method read as the schema's (module docstring), a note for each reading; a `use_dora` is read
    after the method's name, whatever words name the LoRA."""
    _stage(case, notes)
    _dora(case, notes)
    _method_name(case, notes)
    if not case.get("dora"):
        _lora_says_dora(case, notes)


def _method_name(case: dict, notes: list[str]) -> None:
    """The method's name as the schema's five (module docstring), a note for each reading."""
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
