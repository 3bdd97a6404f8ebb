"""Reading one `--from` source: parsing, format detection, includes.

Formats (one module each): LLaMA-Factory YAML/JSON (llamafactory), HF TrainingArguments and TRL
configs, JSON or YAML (hf), DeepSpeed JSON (deepspeed), axolotl YAML (axolotl), ms-swift YAML/JSON
and `swift sft ...` (swift), torchtune YAML (torchtune), torchtitan TOML (torchtitan), accelerate
config YAML (accelerate), and launch lines (launch: torchrun, deepspeed, accelerate launch,
llamafactory-cli, swift, tune run, srun; Megatron-LM's pretrain_gpt.py arguments: megatron_lm, its
scripts' bash expanded by shell), given as a file or as the command itself.

`read_config(source)` parses the file, finds its format (`detect` of each reader: the keys only
that format has) and returns an Imported; `merge.apply` lays several over the defaults, flags last.
Parsers (yaml, tomllib) load only here, when a config is read.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import json
import os
import shlex
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.importers.base import Imported, ReadContext
from trainplan.safeio import CONFIG_LIMIT_BYTES, MAX_DEPTH, check_depth, read_user_text

# reader modules, asked in this order when a file's format is detected (the first best score wins)
READERS = ("launch", "deepspeed", "accelerate", "torchtitan", "torchtune", "axolotl", "swift", "llamafactory", "hf")
LAUNCHERS = ("torchrun", "deepspeed", "accelerate", "llamafactory-cli", "lmf", "swift", "tune", "python", "srun",
             "python3", "megatron", "nproc_per_node", "cuda_visible_devices", "nnodes",
             "uv", "nsys", "numactl", "nohup")          # wrappers launch.py looks past (launch._WRAPPERS)
MAX_CONFIG_BYTES = CONFIG_LIMIT_BYTES    # a training config is a few KiB; anything this large is not one


def _reader(name: str):
    return importlib.import_module(f"trainplan.importers.{name}")


def _is_command(text: str) -> bool:
    """A launch line: its first word after any NAME=value environment assignments is a launcher, a
    shell script or a Python script."""
    words = [w for w in text.strip().split() if not ("=" in w and w.split("=")[0].replace("_", "").isalnum()
                                                    and w.split("=")[0].isupper())]
    if not words:
        return False
    first = os.path.basename(words[0]).lower()
    return first in LAUNCHERS or first.endswith((".sh", ".py"))


def _read_text(path: str) -> str:
    """A config file's text: a regular UTF-8 file of at most MAX_CONFIG_BYTES (safeio: never a FIFO
    or a device, never more than the limit read)."""
    if not os.path.lexists(path):
        raise TrainplanError(f"--from {path!r}: no such file (give a config file, or a launch command in quotes)")
    return read_user_text(path, what="--from", limit_bytes=MAX_CONFIG_BYTES)


def parse(text: str, path: str) -> Any:
    """The parsed content of a config: dict for JSON/YAML/TOML, list of words for a command line.
    Nesting deeper than safeio.MAX_DEPTH is refused (one line, never a RecursionError)."""
    return check_depth(_parse(text, path), what="--from", path=path)


def _parse(text: str, path: str) -> Any:
    ext = os.path.splitext(path)[1].lower()
    stripped = text.lstrip()
    if ext == ".toml":
        import tomllib
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise TrainplanError(f"--from {path!r}: malformed TOML: {exc}") from None
        except RecursionError:
            raise TrainplanError(f"--from {path!r}: TOML nested more than {MAX_DEPTH} levels deep") from None
    if ext == ".json" or stripped.startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise TrainplanError(f"--from {path!r}: malformed JSON: {exc.msg} (line {exc.lineno})") from None
        except RecursionError:
            raise TrainplanError(f"--from {path!r}: JSON nested more than {MAX_DEPTH} levels deep") from None
        except ValueError as exc:   # an integer of more digits than Python converts
            raise TrainplanError(f"--from {path!r}: malformed JSON: {str(exc).splitlines()[0]}") from None
    if ext in SHELL_EXTENSIONS or _shebang_shell(text) or _is_command(_first_command_line(text)):
        from trainplan.importers import shell

        if "pretrain_gpt.py" in text:     # Megatron-LM scripts build their arguments in bash (importers/shell.py)
            words = shell.command_running(text, "pretrain_gpt.py", path)
            if words:
                return words
        if shell.is_script(text):         # variables, several commands: the training command as bash runs it
            words = shell.launch_command(text, path)
            if words:
                return words
        return command_words(text, path)
    return _yaml(text, path)


# shell scripts by name: Slurm batch scripts (`sbatch tr11-176B-ml.slurm`) are bash under #SBATCH directives
SHELL_EXTENSIONS = (".sh", ".bash", ".txt", ".cmd", ".slurm", ".sbatch")


def _shebang_shell(text: str) -> bool:
    """A script whose first line names a shell interpreter: `#!/bin/bash`, `#!/bin/bash -e` (the interpreter is the
    first word; what follows are its options), `#!/usr/bin/env bash`, `#!/usr/bin/env -S bash -e` (env runs the
    first word that is not one of its options)."""
    if not text.lstrip().startswith("#!"):
        return False
    words = text.lstrip()[2:].split("\n", 1)[0].split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
    return bool(words) and os.path.basename(words[0]) in ("bash", "sh", "zsh")


def _first_command_line(text: str) -> str:
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            return line
    return ""


def command_words(text: str, where: str) -> list[str]:
    """A shell command (backslash continuations and comments allowed) as its words; environment
    assignments (NPROC_PER_NODE=8) stay words of their own."""
    lines = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or not stripped:
            continue
        lines.append(stripped[:-1] if stripped.endswith("\\") else stripped)
    try:
        return shlex.split(" ".join(lines), comments=True)
    except ValueError as exc:
        raise TrainplanError(f"--from {where}: cannot split the command line: {exc}") from None


def _yaml(text: str, path: str) -> Any:
    try:
        import yaml
    except ImportError:   # pyyaml is a dependency; this is for broken installs
        raise TrainplanError("reading YAML configs needs PyYAML (pip install pyyaml)") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise TrainplanError(f"--from {path!r}: malformed YAML{where}: {getattr(exc, 'problem', None) or exc}") from None
    except RecursionError:
        raise TrainplanError(f"--from {path!r}: YAML nested more than {MAX_DEPTH} levels deep") from None
    except ValueError as exc:   # an integer of more digits than Python converts
        raise TrainplanError(f"--from {path!r}: malformed YAML: {str(exc).splitlines()[0]}") from None
    return data


def detect(data: Any, path: str) -> str:
    """The reader name whose `detect` scores this config highest (ties: READERS order)."""
    best, best_score = None, 0
    for name in READERS:
        score = _reader(name).detect(data, path)
        if score > best_score:
            best, best_score = name, score
    if best is None and isinstance(data, dict) and "model_type" in data and (
            "hidden_size" in data or "architectures" in data or "n_embd" in data):
        raise TrainplanError(f"--from {path}: this is a model's config.json, not a training config: give it as "
                             f"--model {path}")
    if best is None:
        what = "a command line" if isinstance(data, list) else "a config"
        raise TrainplanError(f"--from {path}: not a training config trainplan reads ({what} of no known format: "
                             "LLaMA-Factory, HF TrainingArguments/TRL, DeepSpeed, axolotl, ms-swift, torchtune, "
                             "torchtitan, accelerate, or a torchrun/deepspeed/accelerate/llamafactory-cli/swift/"
                             "tune/srun launch line, Megatron-LM pretrain_gpt.py included)")
    return best


_CONFINED = contextvars.ContextVar("trainplan_confined_reads", default=False)


@contextlib.contextmanager
def confined_reads():
    """Inside: every config read looks up the files it names only in its own folder (the web page
    reads uploads so: an uploaded config may not make the server open its other files)."""
    token = _CONFINED.set(True)
    try:
        yield
    finally:
        _CONFINED.reset(token)


def read_config(source: str, *, _depth: int = 0, included: bool = False) -> Imported:
    """A config file (or a launch command given as text) read into settings. Inside
    `confined_reads()` the files it names are looked up only inside its own folder."""
    confined = _CONFINED.get()
    if _depth > 4:
        raise TrainplanError(f"--from {source}: configs include each other too deeply")
    if not os.path.exists(source) and _is_command(source):
        data: Any = command_words(source, "the command")
        path, base_dir = "command line", os.getcwd()
    else:
        path = source
        data = parse(_read_text(source), source)
        base_dir = os.path.dirname(os.path.abspath(source))
    if isinstance(data, list) and data and not all(isinstance(w, str) for w in data):
        raise TrainplanError(f"--from {path}: a list is not a training config")
    if not isinstance(data, (dict, list)) or not data:
        raise TrainplanError(f"--from {path}: empty, or not a mapping of settings")
    name = detect(data, path)
    ctx = ReadContext(base_dir=base_dir, included=included, confined=confined,
                      load=lambda p: read_config(p, _depth=_depth + 1, included=True))
    return _reader(name).read(data, path, ctx)
