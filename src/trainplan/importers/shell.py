"""A launch script's command as bash would run it: the variables, arrays and arithmetic it sets, expanded
into the line that starts training, and the job size its `#SBATCH` directives ask Slurm for.

Megatron-LM's example scripts (examples/gpt3/train_gpt3_175b_distributed.sh, examples/llama/
train_llama3_8b_h100_fp8.sh) build the `pretrain_gpt.py` arguments in bash arrays (`GPT_MODEL_ARGS=(...)`,
spliced as `${GPT_MODEL_ARGS[@]}`), the GPU count in variables (`WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))`),
and older ones a string spliced into `srun ... sh -c "${run_cmd}"` under `#SBATCH --nodes=N
--ntasks-per-node=M`. This reads that much of bash, no more: assignments (`export` too), arrays,
`+=` appends, `$NAME`, `${NAME}`, `${NAME[@]}` (its elements split into words, as unquoted), `${NAME:-default}`,
`$((integer arithmetic))`, and `if`/`elif`/`else`/`fi` over `[[ ... ]]` / `[ ... ]` string tests (`==`, `!=`,
`-z`, `-n`, joined by `||` / `&&`; any other test, such as a file test, counts as false). Positional
parameters (`$1`, `$@`) and command substitutions expand to nothing, as unknown, so the bodies of `while` /
`until` / `for` loops and `case` blocks (argument parsing) are not run. Nothing is run.

The `#SBATCH` node and task counts become Slurm's own environment variables (SLURM_NNODES,
SLURM_NTASKS_PER_NODE: what sbatch exports to the job), placed before the command as assignments.

Any other launch script of several commands or with variables (importers/read.py) is read the same way by
`launch_command`: its training command is the first distributed launcher or trainer subcommand (`torchrun`,
`deepspeed`, `accelerate launch`, `swift sft`, `llamafactory-cli train`, `tune run`, `srun`), else the first
`python script.py` (not `python -m pip`); the variables the script `export`ed before it are its environment
(NPROC_PER_NODE, CUDA_VISIBLE_DEVICES: what the trainers count GPUs by), and its redirections are dropped.
"""

from __future__ import annotations

import ast
import os
import re
import shlex

from trainplan.errors import TrainplanError

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_ARRAY_START = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)(\+?)=\((.*)$")
_SHELL_WORDS = {"if", "elif", "else", "fi", "then", "[", "[[", "test", "echo", "printf", "cd", "ls", "cp", "mv",
                "mkdir", "rm", "cat", "for", "while", "do", "done", "case", "esac", "source", ".", "set", "exit",
                "return", "}", "{"}
_REF = re.compile(r"\$\(\((?P<arith>[^()]*(?:\([^()]*\)[^()]*)*)\)\)"
                  r"|\$\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*|[0-9]+)(?P<index>\[[@*0-9]+\])?(?::-(?P<default>[^}]*))?\}"
                  r"|\$(?P<plain>[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?])")
_TASK_IDS = ("SLURM_PROCID", "SLURM_NODEID", "SLURM_LOCALID")      # srun's per-task ids (`--node_rank $SLURM_PROCID`)
_WHOLE_ARRAY = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]\}$")
_SBATCH_VALUE = {"-N": "nodes", "--nodes": "nodes", "--ntasks-per-node": "ntasks_per_node",
                 "--gpus-per-node": "gpus_per_node", "-n": "ntasks", "--ntasks": "ntasks"}


def _arith(expr: str) -> str:
    """An integer `$((...))` of + - * / % and parentheses; anything else is left unexpanded."""
    try:
        tree = ast.parse(expr.replace("/", "//").strip(), mode="eval")
    except SyntaxError:
        return ""
    ops = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.FloorDiv: lambda a, b: a // b if b else 0, ast.Mod: lambda a, b: a % b if b else 0}

    def value(node: ast.AST) -> int:
        if isinstance(node, ast.Expression):
            return value(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in ops:
            return ops[type(node.op)](value(node.left), value(node.right))
        raise ValueError(expr)

    try:
        return str(value(tree))
    except (ValueError, RecursionError):
        return ""


class _Shell:
    def __init__(self) -> None:
        self.scalars: dict[str, str] = {}
        self.arrays: dict[str, list[str]] = {}
        self.slurm: dict[str, str] = {}
        self.exported: list[str] = []      # names `export`ed, in order: the launched command's environment

    def exported_env(self) -> list[str]:
        return [f"{name}={self.scalars[name]}" for name in self.exported if name in self.scalars]

    def _lookup(self, name: str) -> str:
        if name in self.arrays:
            return " ".join(self.arrays[name])
        if name not in self.scalars and name.startswith("SLURM_"):     # what sbatch exports (#SBATCH directives)
            if name in _TASK_IDS:
                return "0"            # what srun gives each task: the script as its first task runs it
            return self.slurm_vars().get(name, "")
        return self.scalars.get(name, "")

    def expand_text(self, text: str) -> str:
        def one(m: re.Match) -> str:
            if m.group("arith") is not None:     # bare names in arithmetic are variables too (unset: 0)
                expr = self.expand_text(m.group("arith"))
                return _arith(re.sub(r"[A-Za-z_][A-Za-z0-9_]*", lambda v: self._lookup(v.group(0)) or "0", expr))
            if m.group("braced") is not None:
                got = self._lookup(m.group("braced"))
                return got if got or m.group("default") is None else self.expand_text(m.group("default"))
            name = m.group("plain")
            return "" if not name or not (name[0].isalpha() or name[0] == "_") else self._lookup(name)
        return _REF.sub(one, text)

    def expand_word(self, word: str) -> list[str]:
        """One word of a command: an array spliced whole is its elements; a variable whose value has
        spaces splits into words (as bash does unquoted; `sh -c "$cmd"` splits it too)."""
        whole = _WHOLE_ARRAY.match(word)
        if whole:
            return [w for item in self.arrays.get(whole.group(1), []) for w in self.expand_text(item).split()]
        out = self.expand_text(word)
        if out != word and "$" in word and any(c.isspace() for c in out):
            return out.split()
        return [out] if out or not word.startswith("$") else []

    def test(self, words: list[str]) -> bool:
        """An `if` condition: `[[ a == b ]]`-style string tests joined by || and &&, left to right."""
        words = [w.removesuffix(";") for w in words]
        words = [w for w in words if w and w not in ("then", "[", "]", "[[", "]]")]
        result, joiner, i = False, "||", 0
        while i < len(words):
            j = i
            while j < len(words) and words[j] not in ("||", "&&"):
                j += 1
            one = [self.expand_text(w) for w in words[i:j]]
            value = _string_test(one)
            result = (result or value) if joiner == "||" else (result and value)
            if j < len(words):
                joiner = words[j]
            i = j + 1
        return result

    def sbatch(self, line: str) -> None:
        try:
            words = shlex.split(line[len("#SBATCH"):], comments=True)
        except ValueError:
            return
        i = 0
        while i < len(words):
            name, eq, value = words[i].partition("=")
            if name in _SBATCH_VALUE:
                if not eq and i + 1 < len(words):
                    value, i = words[i + 1], i + 1
                self.slurm[_SBATCH_VALUE[name]] = value
            i += 1

    def slurm_vars(self) -> dict[str, str]:
        """The variables sbatch exports for the #SBATCH directives read (SLURM_NNODES, ...)."""
        out = {}
        if self.slurm.get("nodes", "").isdigit():
            out["SLURM_NNODES"] = self.slurm["nodes"]
        per_node = self.slurm.get("ntasks_per_node") or self.slurm.get("gpus_per_node") or ""
        if per_node.isdigit():
            out["SLURM_NTASKS_PER_NODE"] = per_node
        if self.slurm.get("ntasks", "").isdigit():
            out["SLURM_NTASKS"] = self.slurm["ntasks"]
        return out

    def slurm_env(self) -> list[str]:
        return [f"{name}={value}" for name, value in self.slurm_vars().items()]


def _string_test(words: list[str]) -> bool:
    if len(words) == 3 and words[1] in ("==", "=", "!="):
        return (words[0] == words[2]) == (words[1] != "!=")
    if len(words) in (1, 2) and words[0] in ("-z", "-n"):
        empty = len(words) == 1 or words[1] == ""
        return empty if words[0] == "-z" else not empty
    return False


def _logical_lines(text: str) -> list[str]:
    """Physical lines with backslash continuations joined, each split into its `;`-separated statements
    (_statements); `#SBATCH` lines kept, other comments kept for shlex to drop."""
    out, pending = [], ""
    for raw in text.splitlines():
        line = raw.rstrip()
        if line.endswith("\\") and not line.lstrip().startswith("#"):
            pending += line[:-1] + " "
            continue
        out += _statements(pending + line)
        pending = ""
    if pending:
        out += _statements(pending)
    return out


_CONTROL = ("if", "elif", "else", "then", "fi", "while", "until", "for", "do", "done", "case", "esac", "function")


def _statements(line: str) -> list[str]:
    """A line's statements as bash separates them at an unquoted `;` (`clear; srun ...`), the line whole where
    it is a comment or opens a control structure (`if [[ ... ]]; then`, whose `;` _branch reads)."""
    first = line.strip().split(maxsplit=1)[0] if line.strip() else ""
    if ";" not in line or first.startswith("#") or first in _CONTROL:
        return [line]
    parts, current, quote, escaped = [], [], "", False
    for ch in line:
        if escaped:
            escaped = False
        elif ch == "\\" and quote != "'":
            escaped = True
        elif quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (not current or current[-1].isspace()):
            break                                  # a comment: the rest of the line
        elif ch == ";":
            parts.append("".join(current))
            current = []
            continue
        current.append(ch)
    if quote:
        return [line]                              # a quote open across lines: first_command reads on
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


def _array_item(sh: _Shell, word: str) -> list[str]:
    """An element of an array literal: a spliced array gives its elements, anything else one element."""
    whole = _WHOLE_ARRAY.match(word)
    if whole:
        return list(sh.arrays.get(whole.group(1), []))
    return [sh.expand_text(word)]


def _branch(sh: _Shell, branches: list[list[bool]], words: list[str]) -> None:
    """if / elif / else / fi: which branch of the innermost `if` runs."""
    kind = words[0]
    if kind == "if":
        outer = all(b[0] for b in branches)
        taken = outer and sh.test(words[1:])
        branches.append([taken, taken, outer])
    elif not branches:
        return
    elif kind == "elif":
        b = branches[-1]
        b[0] = b[2] and not b[1] and sh.test(words[1:])
        b[1] = b[1] or b[0]
    elif kind == "else":
        b = branches[-1]
        b[0] = b[2] and not b[1]
        b[1] = True
    else:
        branches.pop()


def command_running(text: str, script: str, where: str) -> list[str] | None:
    """The words (Slurm's environment first, then the command) of the first command of the script
    `text` whose expansion runs `script`, or None when no command does."""
    return first_command(text, lambda words: any(w == script or w.endswith("/" + script) for w in words), where,
                         exported=True)


def first_command(text: str, runs, where: str, *, exported: bool = False) -> list[str] | None:
    """The words of the first command of the script `text` whose expanded words satisfy `runs`: Slurm's
    environment first, then (with `exported`) the variables the script `export`ed before it, then the
    assignments on its own line and the command. None when no command does."""
    sh = _Shell()
    array: tuple[str, list[str], bool] | None = None
    open_quote = ""
    branches: list[list[bool]] = []    # per open `if`: [this branch runs, an earlier branch ran, enclosing runs]
    loops = 0                          # open while / until / for / case blocks: not run (no arguments to loop over)
    for line in _logical_lines(text):
        stripped = line.strip()
        if not open_quote and stripped.startswith("#SBATCH"):
            sh.sbatch(stripped)
            continue
        if open_quote:                     # a quoted string that spans lines: read on to its end
            line, open_quote = open_quote + "\n" + line, ""
        if array is None and (m := _ARRAY_START.match(line)):
            array, line = (m.group(1), [], m.group(2) == "+"), m.group(3)
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            open_quote = line
            continue
        running = all(b[0] for b in branches)
        if array is not None:
            name, items, append = array
            closing = bool(words) and words[-1].endswith(")")
            if closing:
                words[-1] = words[-1][:-1]
            items += [w for word in words if word for w in _array_item(sh, word)]
            if closing:
                if running:
                    sh.arrays[name] = (sh.arrays.get(name, []) if append else []) + items
                    sh.scalars.pop(name, None)
                array = None
            continue
        if words and words[0] in ("while", "until", "for", "case"):
            loops += 1
            continue
        if words and words[0] in ("done", "esac"):
            loops = max(0, loops - 1)
            continue
        if loops:
            continue
        if words and words[0] in ("if", "elif", "else", "fi"):
            _branch(sh, branches, words)
            continue
        if words and words[0] == "then":
            words = words[1:]
        if not running or not words:
            continue
        if words[0] == "exit":
            break
        exporting = bool(words) and words[0] == "export"
        if words and words[0] in ("export", "local", "declare", "readonly"):
            words = words[1:]
        env, i = [], 0
        while i < len(words) and (m := _ASSIGN.match(words[i])):
            env.append((m.group(1), sh.expand_text(m.group(2))))
            i += 1
        if i == len(words) or exporting:      # assignments only (an `export` line runs nothing)
            for name, value in env:
                sh.scalars[name] = value
                sh.arrays.pop(name, None)
            if exporting:     # `export NAME=value` and `export NAME` of a name set earlier
                names = [name for name, _ in env] + [w for w in words[i:] if re.fullmatch(r"[A-Za-z_]\w*", w)]
                sh.exported += [name for name in names if name not in sh.exported]
            continue
        if words[i] in _SHELL_WORDS:
            continue
        expanded = [w for word in words[i:] for w in sh.expand_word(word)]
        if runs(expanded):
            return sh.slurm_env() + (sh.exported_env() if exported else []) + [f"{k}={v}" for k, v in env] + expanded
    if open_quote:
        raise TrainplanError(f"--from {where}: a quotation in the script is never closed")
    return None


# The commands that start training, with the subcommand that does where the tool has others
# (`accelerate config`, `swift infer`, `llamafactory-cli chat` are not training).
_TRAINING_SUBCOMMAND = {"accelerate": {"launch"}, "swift": {"sft", "pt", "rlhf"}, "megatron": {"sft", "pt", "rlhf"},
                        "llamafactory-cli": {"train"}, "lmf": {"train"}, "tune": {"run"}}
_LAUNCHERS = {"torchrun", "deepspeed", "srun", *_TRAINING_SUBCOMMAND}
# torchrun's module (torch/distributed/run.py; launch.py runs it too), as `python -m` starts it
TORCH_LAUNCH_MODULES = ("torch.distributed.run", "torch.distributed.launch")
_DISTRIBUTED_MODULES = (*TORCH_LAUNCH_MODULES, "deepspeed.launcher.runner", "accelerate.commands.launch")
_NOT_TRAINING_MODULES = ("pip", "venv", "ensurepip", "json.tool", "http.server")


def _after_wrappers(words: list[str]) -> list[str]:
    """The command a wrapper (`nohup`, `uv run`, `numactl ...`, importers.launch._WRAPPERS) runs: the
    words from the first launcher or Python on."""
    from trainplan.importers.launch import _WRAPPERS

    if not words or os.path.basename(words[0]).lower() not in _WRAPPERS:
        return words
    for k, word in enumerate(words):
        name = os.path.basename(word).lower()
        if name in _LAUNCHERS or name in ("python", "python3") or name.endswith(".py"):
            return words[k:]
    return []


def _launches_training(words: list[str]) -> bool:
    """A distributed launcher or a trainer's training subcommand (`torchrun`, `deepspeed`,
    `accelerate launch`, `swift sft`, `llamafactory-cli train`, `tune run`, `srun`, `python -m
    torch.distributed.run`)."""
    words = _after_wrappers(words)
    if not words:
        return False
    name = os.path.basename(words[0]).lower()
    if name in _TRAINING_SUBCOMMAND:
        return len(words) > 1 and words[1] in _TRAINING_SUBCOMMAND[name]
    if name in _LAUNCHERS:
        return True
    return name in ("python", "python3") and any(
        words[k] == "-m" and words[k + 1] in _DISTRIBUTED_MODULES for k in range(min(len(words) - 1, 3)))


def _runs_python_script(words: list[str]) -> bool:
    """`python train.py ...` (or `train.py ...`): a Python script, not `python -m pip` or `python -c`."""
    words = _after_wrappers(words)
    if not words:
        return False
    name = os.path.basename(words[0]).lower()
    if name.endswith(".py"):
        return True
    if name not in ("python", "python3") or "-c" in words[1:3]:
        return False
    if "-m" in words[1:3]:
        module = words[words.index("-m") + 1] if words.index("-m") + 1 < len(words) else ""
        return bool(module) and not module.startswith(_NOT_TRAINING_MODULES)
    return any(w.endswith(".py") for w in words[1:3])


def launch_command(text: str, where: str) -> list[str] | None:
    """The training command of a launch script, expanded as bash would run it (its variables, arrays,
    `if` branches), with the Slurm environment and the variables the script exports before it: the first
    distributed launcher or trainer subcommand, else the first Python training script; None when the
    script runs neither."""
    words = (first_command(text, _launches_training, where, exported=True)
             or first_command(text, _runs_python_script, where, exported=True))
    return None if words is None else _without_redirections(words)


_REDIRECT = re.compile(r"^(?:\d*|&)(?:>>?|<)(?:&\d+)?$")    # >, >>, 2>, &>, <, 2>&1 (a target may follow)
_REDIRECT_JOINED = re.compile(r"^(?:\d*|&)(?:>>?|<)(?:&\d+|\S+)$")   # 2>&1, >train.log


def _without_redirections(words: list[str]) -> list[str]:
    """The command's words without its redirections (`> train.log 2>&1`) and a trailing `&`."""
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif _REDIRECT.match(word):
            skip = not word.endswith(("&1", "&2"))
        elif not _REDIRECT_JOINED.match(word) and word != "&":
            out.append(word)
    return out


def is_script(text: str) -> bool:
    """More than one command, or one that uses shell variables: what bash has to expand first."""
    commands = [line for line in _logical_lines(text) if line.strip() and not line.lstrip().startswith("#")]
    return len(commands) > 1 or "$" in text
