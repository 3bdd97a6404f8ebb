"""The training script a launch line starts (importers/launch.py), and its arguments: Megatron-LM's
pretrain_gpt.py (importers/megatron_lm.py), torchtitan's `-m torchtitan.train --job.config_file X` with its
`--section.key value` overrides (importers/torchtitan.py), and a script's `--key value` arguments over a
positional YAML/JSON (HfArgumentParser.parse_yaml_file, LLaMA-Factory hparams/parser.py read_args), read by
the reader of their format (importers/hf.py when nothing else claims them).
"""

from __future__ import annotations

import os
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.importers import megatron_lm
from trainplan.importers import torchtitan as titan
from trainplan.importers.base import Collector, Imported, Origin, ReadContext

_CONFIG_EXT = (".yaml", ".yml", ".json", ".toml")


def _load(c: Collector, name: str, ctx: ReadContext | None, key: str) -> tuple[str, Any] | None:
    """A config file's path and parsed content (to apply overrides before its reader runs)."""
    from trainplan import importers

    found = ctx.resolve_path(name) if ctx is not None else None
    if found is None:
        c.skip(key, name, "file not found: its settings are not read")
        return None
    found = os.path.normpath(found)
    return found, importers.parse(importers._read_text(found), found)


def _script(c: Collector, words: list[str], ctx: ReadContext | None, env: dict, world: int | None) -> None:
    """The training script (a path, or the module of `-m`) and its arguments."""
    if words and megatron_lm.is_megatron_lm(words[0]):
        megatron_lm.read_args(c, words[1:], world)
    elif words and titan.is_torchtitan(words[1:], words[0]):
        _titan(c, words[1:], ctx, env, world)
    elif words:
        script_args(c, words[1:], ctx)


def _titan(c: Collector, args: list[str], ctx: ReadContext | None, env: dict, world: int | None) -> None:
    name = titan.config_file_of(args, env)
    if name is None:
        c.skip("--job.config_file", None, "torchtitan without a TOML job config: its defaults are not assumed")
        return
    loaded = _load(c, name, ctx, "--job.config_file")
    if loaded is None:
        return
    found, data = loaded
    if not isinstance(data, dict):
        raise TrainplanError(f"--from {c.file}: {found} is not a torchtitan TOML job config")
    merged, rest = titan.apply_overrides(data, args, c.file)
    c.merge(titan.read_job(merged, found, ctx, world=world))
    c.ignore(len(rest))


def script_args(c: Collector, args: list[str], ctx: ReadContext | None) -> None:
    """A training script's arguments (`--per_device_train_batch_size 4 --bf16 --deepspeed ds.json`, and a
    positional YAML/JSON config as HfArgumentParser.parse_yaml_file and LLaMA-Factory's read_args take it,
    the `--key value` arguments laid over it), read by the reader of that config's format (HF
    TrainingArguments when nothing else claims them)."""
    from trainplan.importers import read as reader

    values: dict[str, Any] = {}
    config, i = None, 0
    while i < len(args):
        word = args[i]
        if word.startswith("--") and len(word) > 2:
            name, eq, value = word[2:].partition("=")
            items = [value] if eq else []
            while not eq and i + 1 < len(args) and not args[i + 1].startswith("--"):
                items.append(args[i + 1])
                i += 1
            parsed = [_scalar(x) for x in items]
            values[name.replace("-", "_")] = True if not parsed else parsed[0] if len(parsed) == 1 else parsed
        elif word.lower().endswith(_CONFIG_EXT) and config is None:
            config = word
        else:
            c.ignore()
        i += 1
    where, data = c.file, {}
    if config is not None:
        loaded = _load(c, config, ctx, "(script config)")
        if loaded is not None:
            where, data = loaded
            if not isinstance(data, dict):
                raise TrainplanError(f"--from {c.file}: {where} is not a mapping of training arguments")
    if not values and not data:
        return
    merged = {**data, **values}
    try:
        name = reader.detect(merged, where)
    except TrainplanError:
        name = "hf"
    name = name if name in ("llamafactory", "hf", "axolotl", "swift") else "hf"
    imported = reader._reader(name).read(merged, where, ctx)
    if where == c.file:
        _absorb(c, imported)
    else:
        c.merge(imported)


def _absorb(c: Collector, imported: Imported) -> None:
    """Another reader's settings for this same command line (not a file it named). The script's framework
    defaults do not replace what the launcher's config set: under `accelerate launch` the Trainer takes
    mixed precision and FSDP from the environment the launcher exports (ACCELERATE_MIXED_PRECISION,
    ACCELERATE_USE_FSDP, FSDP_* in accelerate utils/launch.py) unless its own arguments say otherwise."""
    have = {s.field for s in c.settings}
    c.settings.extend(s for s in imported.settings if s.field not in have or (
        s.origin is not Origin.FRAMEWORK_DEFAULT and not (s.field == "framework" and s.value == "hf")))
    c.unread.extend(imported.unread)
    c.ignored += imported.ignored
    c.includes.extend(imported.includes)


def _scalar(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    import yaml

    try:
        return yaml.safe_load(value) if value.strip() else value
    except yaml.YAMLError:
        return value
