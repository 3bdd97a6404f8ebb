"""What every config reader shares: the settings it read (with the key and value each came from),
the keys it could not use, and the context to pull in a file the config names.

A reader turns one parsed config (a dict, or a command line's words) into `Setting`s, each a
JobOptions field with its value in trainplan's own terms (the strings the CLI takes), the key and
raw value it came from, and, where the mapping is a judgement or a framework's default, a note
naming the framework's source. Keys that would change memory or time but that the reader cannot
map (or trainplan cannot model) are `Unread`, never dropped silently; keys that do not matter
(learning rate, logging, paths) are only counted.
"""

from __future__ import annotations

import enum
import os

from trainplan.errors import TrainplanError
from trainplan.frozen import field, frozen
from trainplan.job.capabilities import flash_version_named

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class Origin(enum.StrEnum):
    FILE = "file"                          # the key's value in the file
    FRAMEWORK_DEFAULT = "framework default"  # the format's own default for a key the file leaves out
    DERIVED = "derived"                    # computed from several keys (global batch / GPUs, ...)
    FLAG = "flag"                          # given on trainplan's command line (overrides files)
    PROFILE = "framework profile"          # trainplan's framework profile (job/frameworks.py)
    DEFAULT = "trainplan default"


@frozen
class Setting:
    """One JobOptions field read from a config."""

    field: str
    value: Any
    origin: Origin = Origin.FILE
    key: str = ""          # the key(s) read, dotted for nested ones ("zero_optimization.stage")
    raw: Any = None        # the value as the file has it
    file: str = ""
    note: str = ""         # why this mapping, with the framework source where it is a default or a rule
    version: str = ""      # a framework default: the framework version it was read from

    def to_dict(self) -> dict[str, Any]:
        out = {"field": self.field, "value": _plain(self.value), "origin": str(self.origin)}
        for name in ("key", "file", "note", "version"):
            if getattr(self, name):
                out[name] = getattr(self, name)
        if self.raw is not None:
            out["raw"] = _plain(self.raw)
        return out


@frozen
class Unread:
    """A key that would change memory or time but was not used, and why."""

    key: str
    value: Any
    why: str
    file: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "value": _plain(self.value), "why": self.why, "file": self.file}


@frozen
class Imported:
    """What one config file (or command line) says about the job."""

    format: str                                # "llamafactory", "hf", "deepspeed", ...
    file: str
    settings: tuple[Setting, ...] = ()
    unread: tuple[Unread, ...] = ()
    ignored: int = 0                           # keys read that do not affect memory or time
    includes: tuple[str, ...] = ()             # files this one named and that were read with it

    def values(self) -> dict[str, Any]:
        """field -> value, the last setting of a field winning."""
        return {s.field: s.value for s in self.settings}

    def to_dict(self) -> dict[str, Any]:
        return {"format": self.format, "file": self.file, "settings": [s.to_dict() for s in self.settings],
                "unread": [u.to_dict() for u in self.unread], "ignored": self.ignored,
                "includes": list(self.includes)}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    name = getattr(value, "name", None)
    if isinstance(name, str) and hasattr(value, "num_layers"):   # a model a reader built from flags (megatron_lm)
        return name
    return value


@frozen
class ReadContext:
    """Where a reader resolves the files a config names (relative to the config's folder first,
    then the working directory), and how it reads them."""

    base_dir: str = "."
    load: Callable[[str], Imported] | None = field(default=None)   # read another config (any format)
    included: bool = False     # this config was named by another (a DeepSpeed JSON inside an HF config)
    confined: bool = False     # only files inside base_dir (an uploaded config may not name server files)

    def resolve_path(self, name: str) -> str | None:
        if self.confined:
            root = os.path.realpath(self.base_dir)
            candidate = os.path.realpath(os.path.join(root, name))
            if os.path.commonpath([candidate, root]) != root:   # said whether or not such a file exists
                from trainplan.errors import TrainplanError

                raise TrainplanError(f"names {name!r}, a file outside the upload: upload that file's settings instead")
            return candidate if os.path.isfile(candidate) else None
        for base in (self.base_dir, os.getcwd()):
            candidate = os.path.normpath(os.path.join(base, os.path.expanduser(name)))
            if os.path.isfile(candidate):
                return candidate
        return None

    def include(self, name: str) -> Imported | None:
        """The named config read with its own reader, or None when the file is not there."""
        path = self.resolve_path(name)
        if path is None or self.load is None:
            return None
        return self.load(path)


class Collector:
    """Builds an Imported while a reader walks its config: every key is either used (a Setting),
    unread (with why) or ignored, so that the count of keys is honest."""

    def __init__(self, fmt: str, file: str) -> None:
        self.format, self.file = fmt, file
        self.settings: list[Setting] = []
        self.unread: list[Unread] = []
        self.ignored = 0
        self.includes: list[str] = []

    def set(self, field_name: str, value: Any, *, key: str = "", raw: Any = None, origin: Origin = Origin.FILE,
            note: str = "", version: str = "") -> None:
        self.settings.append(Setting(field=field_name, value=value, origin=origin, key=key,
                                     raw=raw, file=self.file if origin is not Origin.FRAMEWORK_DEFAULT else "",
                                     note=note, version=version))

    def default(self, field_name: str, value: Any, *, key: str, note: str, version: str | None = None) -> None:
        """The format's default for a key the file leaves out (note: where the default is defined;
        version: the framework release it was read from, by default the VERSION of the format's
        job/defaults module)."""
        if version is None:
            from trainplan.job import defaults

            version = defaults.version(self.format) if self.format in defaults.FRAMEWORKS else ""
        self.set(field_name, value, key=key, origin=Origin.FRAMEWORK_DEFAULT, note=note, version=version)

    def derived(self, field_name: str, value: Any, *, key: str, note: str) -> None:
        self.set(field_name, value, key=key, origin=Origin.DERIVED, note=note)

    def skip(self, key: str, value: Any, why: str) -> None:
        self.unread.append(Unread(key=key, value=value, why=why, file=self.file))

    def ignore(self, count: int = 1) -> None:
        self.ignored += count

    def merge(self, other: Imported, *, prefix: str = "") -> None:
        """Take another config's settings (an included DeepSpeed JSON) after this one's so far."""
        self.settings.extend(other.settings)
        self.unread.extend(other.unread)
        self.ignored += other.ignored
        self.includes.append(other.file)
        self.includes.extend(other.includes)

    def has(self, field_name: str) -> bool:
        return any(s.field == field_name for s in self.settings)

    def result(self) -> Imported:
        return Imported(format=self.format, file=self.file, settings=tuple(self.settings),
                        unread=tuple(self.unread), ignored=self.ignored, includes=tuple(self.includes))


# --- small value helpers readers share ------------------------------------------------------------

_TRUE = {"true", "yes", "on", "1", "y"}
_FALSE = {"false", "no", "off", "0", "n", "none", "null", ""}


def as_bool(value: Any, key: str, file: str = "") -> bool:
    """A config boolean: true/false, 1/0, "yes"/"no" (YAML and command lines spell them all)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise TrainplanError(f"{file or 'config'}: {key} must be true or false, got {value!r}")


def as_int(value: Any, key: str, file: str = "", *, minimum: int | None = None) -> int:
    if isinstance(value, bool):
        raise TrainplanError(f"{file or 'config'}: {key} must be an integer, got {value!r}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:
            raise TrainplanError(f"{file or 'config'}: {key} must be an integer, got {value!r}") from None
    if not isinstance(value, int):
        raise TrainplanError(f"{file or 'config'}: {key} must be an integer, got {value!r}")
    if minimum is not None and value < minimum:
        raise TrainplanError(f"{file or 'config'}: {key} must be at least {minimum}, got {value}")
    return value


def as_float(value: Any, key: str, file: str = "") -> float:
    if isinstance(value, bool):
        raise TrainplanError(f"{file or 'config'}: {key} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TrainplanError(f"{file or 'config'}: {key} must be a number, got {value!r}") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise TrainplanError(f"{file or 'config'}: {key} must be a finite number, got {value!r}")
    return number


def is_auto(value: Any) -> bool:
    """DeepSpeed / HF "auto": the value is filled in by the integration at run time."""
    return isinstance(value, str) and value.strip().lower() == "auto"


# Megatron's three communication-overlap knobs (megatron/training/arguments.py, ms-swift megatron_args.py: each
# False by default); any of them on is Megatron's overlap as trainplan times it (timing.overlap)
MEGATRON_OVERLAP_FLAGS = ("tp_comm_overlap", "overlap_grad_reduce", "overlap_param_gather")


def read_megatron_overlap(c: Collector, on: list[str], key: str) -> None:
    """`comm_overlap` from the MEGATRON_OVERLAP_FLAGS a Megatron config turns `on` (`key`: the first, as the
    config spells it)."""
    if on:
        c.set("comm_overlap", True, key=key, raw=True, note="Megatron communication overlap: " + ", ".join(on))


def read_modules_to_save(c: Collector, value: Any, key: str) -> None:
    """peft modules_to_save (LoRA's fully trained module copies) under the format's own key: the input
    embedding and the LM head are modelled (JobOptions.modules_to_save); any other module is reported unread."""
    from trainplan.model.params import saved_role

    kept = [n for n in names(value) if saved_role(n)]
    other = [n for n in names(value) if not saved_role(n)]
    if kept:
        c.set("modules_to_save", ",".join(kept), key=key, raw=value)
    if other:
        c.skip(key, ",".join(other), "fully trained copies of modules other than the embedding and the LM head "
                                     "are not modelled")


def read_dataset(c: Collector, value: Any, key: str) -> None:
    """The datasets a config trains on, by name (a list, or names separated by commas or spaces): their sample
    lengths and size from the dataset catalog (JobOptions.dataset) when every one is in it; else the key counts
    as ignored, as it did before the catalog (a dataset of one's own: --tokens-per-sample / --lengths-file)."""
    from trainplan.catalog.datasets import find_dataset

    given = tuple(n.strip("'\"") for part in names(value) for n in part.split() if n.strip("'\""))
    unknown = [n for n in given if find_dataset(n) is None]
    if not given:
        return
    if unknown:
        c.ignore()
        return
    c.set("dataset", ",".join(given), key=key, raw=value)


def names(value: Any) -> tuple[str, ...]:
    """A list of module names from a YAML list or a comma-separated string."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(p.strip() for p in value.split(",") if p.strip())
    if isinstance(value, (list, tuple, set, frozenset)):
        return tuple(str(v).strip() for v in value if str(v).strip())
    return (str(value),)


def read_flash_version(c: Collector, name: Any, key: str) -> None:
    """FlashAttention 3 or 4 named by an attention setting (job.capabilities.flash_version_named). Version 2 is the
    default and left unsaid."""
    version = flash_version_named(str(name))
    if version and version > 2:
        c.set("flash_version", version, key=key, raw=name)


def read_length_grouping(c: Collector, flag: Any, strategy: Any) -> None:
    """The HF Trainer's length-grouped sampler: TrainingArguments.group_by_length (transformers 4) or
    train_sampling_strategy "group_by_length" (transformers 5, which also offers random, sequential and
    batch_rebalance; trainer.py _get_train_sampler). LLaMA-Factory, ms-swift and axolotl pass either through."""
    if str(strategy).lower() == "batch_rebalance":
        c.skip("train_sampling_strategy", strategy, "BatchRebalanceSampler's cost-balanced micro-batches of varying "
               "size are not modelled: timed as random batches")
    elif strategy is not None:
        c.set("group_by_length", str(strategy).lower() == "group_by_length", key="train_sampling_strategy",
              raw=strategy)
    elif flag is not None:
        c.set("group_by_length", as_bool(flag, "group_by_length", c.file), key="group_by_length", raw=flag)


_EPOCH_NOTE = "the held-out samples evaluated after each epoch"


def set_eval_strategy(c: Collector, raw: Any, key: str, every, epoch_note: str = _EPOCH_NOTE) -> None:
    """One eval_strategy (`raw`, read at `key`) as settings: "no" none, "epoch" eval_each_epoch, "steps" eval_steps
    from `every()`, which gives (its value, the key it is read at, a note) only when asked (each format's own
    fallback: logging_steps, save_steps); anything else refused."""
    strategy = str(raw).strip().lower()
    if strategy == "no":
        return
    if strategy == "epoch":
        c.set("eval_each_epoch", True, key=key, raw=raw, note=epoch_note)
    elif strategy == "steps":
        value_raw, where, note = every()
        value = as_float(value_raw, where, c.file)
        if value <= 0:
            raise TrainplanError(f"--from {c.file}: eval_strategy steps needs a positive eval_steps, got {value_raw!r}")
        c.set("eval_steps", value, key=where, raw=value_raw, note=note)
    else:
        raise TrainplanError(f"--from {c.file}: {key} must be no, steps or epoch, got {raw!r}")


def read_evaluation(c: Collector, get) -> None:
    """HF TrainingArguments' periodic evaluation, which LLaMA-Factory and TRL pass through: eval_strategy (its
    transformers 4 name evaluation_strategy) "no" (the default), "steps" or "epoch"; under "steps", eval_steps,
    falling back to logging_steps (default 500) where it is unset or 0 (transformers 5.25 training_args.py
    __post_init__). What it evaluates is the held-out split (val_size), read where the format has one."""
    # each key is asked for once, and only where it counts: `get` may take it from the keys left to read, and a key
    # that changes nothing stays among them
    key, raw = "eval_strategy", get("eval_strategy")
    if raw is None:
        key, raw = "evaluation_strategy", get("evaluation_strategy")
    if raw is None:
        return

    def every() -> tuple[Any, str, str]:
        steps = get("eval_steps")
        if steps is not None and as_float(steps, "eval_steps", c.file) != 0:
            return steps, "eval_steps", ""
        logging = get("logging_steps")
        return (logging if logging is not None else 500), "logging_steps", \
            "eval_steps unset: logging_steps (transformers TrainingArguments)"

    set_eval_strategy(c, raw, key, every)


def read_experts_impl(c: Collector, value: Any, key: str) -> None:
    """How transformers 5 runs an MoE model's experts (from_pretrained experts_implementation; ms-swift
    `experts_impl`, axolotl `experts_implementation`): "eager" is the per-expert loop, "grouped_mm" transformers'
    default; batched_mm and axolotl's scattermoe / sonicmoe kernels are grouped GEMMs of their own, timed as
    grouped_mm."""
    if value is None:
        return
    name = str(value).strip().lower()
    if name == "eager":
        c.set("experts_implementation", "eager", key=key, raw=value)
    else:
        c.set("experts_implementation", "grouped_mm", key=key, raw=value,
              note="" if name == "grouped_mm" else f"{name}: grouped expert GEMMs, timed as transformers' grouped_mm")
