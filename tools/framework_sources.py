"""The training frameworks' own source, fetched from PyPI and read as text, for
tests/test_framework_defaults.py (which compares trainplan/job/defaults/<framework>.py with it).

Nothing here imports a framework: they pull heavy dependencies and pin transformers/torch versions
of their own. Each pinned release is fetched once with `pip download <dist>==<version> --no-deps`
(DS_BUILD_OPS=0 for DeepSpeed's sdist) and unpacked under the cache directory,
$TRAINPLAN_FRAMEWORK_SOURCES or ~/.cache/trainplan-framework-sources; the installed transformers is
read from its files in site-packages when its version is the pinned one. The Python files are then
parsed with `ast`: dataclass fields (`name: T = field(default=...)` or `name: T = value`), pydantic
fields (`Field(default=...)`, `Field(value, ...)`), argparse `add_argument(..., default=...)`,
`x.get(key, default)` and `os.environ.get(...)` calls, function parameters, dict literals; the
JSON presets are read as JSON.

    python tools/framework_sources.py            # fetch every pinned release, print where each lies
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CACHE_ENV = "TRAINPLAN_FRAMEWORK_SOURCES"


@dataclass(frozen=True)
class Pin:
    """One release to read: the PyPI distribution, its version, wheel or sdist, the folder inside
    the archive that holds the Python packages, and why this version."""

    dist: str
    version: str
    why: str
    kind: str = "wheel"            # "wheel" or "sdist"
    packages: str = ""             # folder in the unpacked archive holding the packages ("" = its top)
    installed_ok: bool = False     # read the installed distribution when its version is this one


# The PyPI release closest to the source each defaults module was written from (its VERSION).
# The GitHub commits were compared with the candidate releases file by file (the argument classes).
PINS: dict[str, Pin] = {
    "llamafactory": Pin("llamafactory", "0.9.5",
                        "LLaMA-Factory ff6d4d1 is v0.9.5 + 54 commits; 0.9.5 is the newest release "
                        "(data_args.py, training_args.py identical; finetuning/model_args differ in unrelated fields)"),
    "transformers": Pin("transformers", "5.24.0", "the version hf.py names (and the one installed here)",
                        installed_ok=True),
    "transformers-5.8": Pin("transformers", "5.8.0",
                            "LLaMA-Factory's HF trainer keys: llamafactory.py reads them from transformers 5.8.0"),
    "trl": Pin("trl", "1.9.2",
               "TRL f2cd577 (1.10.0.dev0) is v1.9.0 + 26 commits; 1.9.2 (2026-07-28) has its model/base/SFT/DPO "
               "configs unchanged (1.10.0 differs in sft/dpo/grpo configs, 1.16.0 much more)"),
    "axolotl": Pin("axolotl", "0.18.0",
                   "axolotl 067b021 is v0.18.0 + 9 commits, the schemas and loaders/model.py unchanged; the sdist "
                   "also holds deepspeed_configs/", kind="sdist", packages="axolotl-0.18.0/src"),
    "swift": Pin("ms-swift", "4.6.0",
                 "ms-swift 3602360 is main at 4.6.0.dev0; 4.6.0 is the release it became"),
    "torchtune": Pin("torchtune", "0.6.1",
                     "torchtune bd2a0fc (2026-04-23) is a year after 0.6.1 (2025-04-07), the last PyPI release; "
                     "keys added since (context_parallel_dim) are marked in the test"),
    "torchtitan": Pin("torchtitan", "0.2.2", "torchtitan.py reads v0.2.2 itself"),
    "accelerate": Pin("accelerate", "1.14.0",
                      "accelerate 16cb6eb is v1.14.0 + commits; launch.py and utils/dataclasses.py differ from "
                      "1.14.0 by 8 lines, from 1.15.0 by 23", installed_ok=True),
    "deepspeed": Pin("deepspeed", "0.19.6",
                     "trainplan's DeepSpeed reader names DeepSpeed edaa722 (2026-08-22), between 0.19.5 and 0.19.6 "
                     "(version.txt 0.19.6): the first release holding it", kind="sdist",
                     packages="deepspeed-0.19.6"),
}


class SourceUnavailable(RuntimeError):
    """A pinned release could not be fetched (no network and no cached copy)."""


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "trainplan-framework-sources")


def _installed_root(pin: Pin) -> Path | None:
    if not pin.installed_ok:
        return None
    try:
        dist = importlib.metadata.distribution(pin.dist)
    except importlib.metadata.PackageNotFoundError:
        return None
    if dist.version != pin.version:
        return None
    root = Path(dist.locate_file(""))
    return root if (root / pin.dist.replace("-", "_")).is_dir() else None


def _download(pin: Pin, into: Path) -> Path:
    binary = ["--no-binary", ":all:"] if pin.kind == "sdist" else ["--only-binary", ":all:"]
    cmd = [sys.executable, "-m", "pip", "download", f"{pin.dist}=={pin.version}", "--no-deps", *binary,
           "-d", str(into), "--quiet", "--disable-pip-version-check", "--retries", "1", "--timeout", "30"]
    env = {**os.environ, "DS_BUILD_OPS": "0", "PIP_NO_INPUT": "1"}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SourceUnavailable(f"pip download {pin.dist}=={pin.version} failed: {exc}") from None
    files = [p for p in into.iterdir() if p.is_file()]
    if proc.returncode != 0 or not files:
        lines = [ln.strip() for ln in (proc.stderr or proc.stdout).splitlines() if ln.strip()]
        raise SourceUnavailable(f"pip download {pin.dist}=={pin.version} failed (exit {proc.returncode}): "
                                f"{lines[-1] if lines else 'no file'}")
    return files[0]


def _unpack(archive: Path, into: Path) -> None:
    if archive.suffix == ".whl" or archive.suffix == ".zip":
        with zipfile.ZipFile(archive) as z:
            z.extractall(into)
    else:
        with tarfile.open(archive) as t:
            if hasattr(tarfile, "data_filter"):
                t.extractall(into, filter="data")
            else:                                       # Python < 3.11.4
                t.extractall(into)


def fetch(name: str) -> Path:
    """The folder holding the pinned release's unpacked archive (downloaded once, then cached)."""
    pin = PINS[name]
    root = _installed_root(pin)
    if root is not None:
        return root
    target = cache_dir() / f"{pin.dist}-{pin.version}-{pin.kind}"
    if target.is_dir():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{pin.dist}-", dir=target.parent))
    try:
        (work / "download").mkdir()
        archive = _download(pin, work / "download")
        _unpack(archive, work / "tree")
        try:
            os.replace(work / "tree", target)           # atomic: a half-unpacked tree is never seen
        except OSError:
            if not target.is_dir():                     # (another process won the race otherwise)
                raise
    except SourceUnavailable as exc:
        raise SourceUnavailable(f"{exc}; the framework-defaults tests read {pin.dist} {pin.version} from PyPI "
                                f"(network access, or a filled cache at {cache_dir()} (${CACHE_ENV}))") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


# --------------------------------------------------------------------------------------------
# Reading Python source without running it

class Unresolved:
    """A value the reader cannot work out from the source alone (a call, a runtime lookup)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return f"<not a literal: {self.text}>"

    def __eq__(self, other) -> bool:
        return False

    __hash__ = object.__hash__


class NoDefault:
    """A field declared without a default (required)."""

    def __repr__(self) -> str:
        return "<no default>"


NO_DEFAULT = NoDefault()


class _CannotEvaluate(Exception):
    pass


@dataclass(frozen=True)
class Found:
    """A default found in the source: its value and where (path:line, relative to the release)."""

    value: Any
    where: str


@dataclass
class ClassRef:
    module: Module
    node: ast.ClassDef

    @property
    def name(self) -> str:
        return f"{self.module.name}.{self.node.name}"

    def __hash__(self) -> int:
        return id(self.node)

    def __eq__(self, other) -> bool:
        return isinstance(other, ClassRef) and other.node is self.node


@dataclass(frozen=True)
class Factory:
    """`default_factory=SomeClass`: a nested config section."""

    cls: ClassRef


@dataclass
class FieldInfo:
    name: str
    value: Any
    where: str
    alias: str | None = None


_PURE = {"int": int, "float": float, "str": str, "bool": bool, "pp_int": int, "tuple": tuple, "list": list,
         "frozenset": frozenset, "set": set}


def _is_except_branch(parents: list[ast.AST]) -> bool:
    return any(isinstance(p, ast.ExceptHandler) for p in parents)


def _bindings(body: list[ast.stmt]) -> dict[str, list[tuple[ast.AST, bool]]]:
    """name -> [(binding node, inside an except branch)] for the statements of a module or class body,
    descending into if/try/with blocks (not into functions or classes), in source order."""
    out: dict[str, list[tuple[ast.AST, bool]]] = {}

    def walk(stmts, parents):
        for st in stmts:
            exc = _is_except_branch(parents)
            if isinstance(st, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                out.setdefault(st.name, []).append((st, exc))
            elif isinstance(st, ast.Assign):
                for t in st.targets:
                    if isinstance(t, ast.Name):
                        out.setdefault(t.id, []).append((st.value, exc))
            elif isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and st.value is not None:
                out.setdefault(st.target.id, []).append((st.value, exc))
            elif isinstance(st, (ast.Import, ast.ImportFrom)):
                for alias in st.names:
                    bound = alias.asname or alias.name.split(".")[0]
                    out.setdefault(bound, []).append(((st, alias), exc))
            elif isinstance(st, ast.If):
                walk(st.body, parents + [st])
                walk(st.orelse, parents + [st])
            elif isinstance(st, ast.Try):
                walk(st.body, parents + [st])
                for h in st.handlers:
                    walk(h.body, parents + [st, h])
                walk(st.orelse, parents + [st])
                walk(st.finalbody, parents + [st])
            elif isinstance(st, (ast.With, ast.AsyncWith)):
                walk(st.body, parents + [st])

    walk(body, [])
    return out


class Module:
    def __init__(self, tree: SourceTree, name: str, path: Path, is_package: bool):
        self.tree, self.name, self.path, self.is_package = tree, name, path, is_package
        self.text = path.read_text(encoding="utf-8")
        self.ast = ast.parse(self.text, filename=str(path))
        self.names = _bindings(self.ast.body)

    @property
    def rel(self) -> str:
        return self.tree.rel(self.path)

    def where(self, node: ast.AST) -> str:
        return f"{self.rel}:{getattr(node, 'lineno', '?')}"

    # -- names ---------------------------------------------------------------------------
    def resolve(self, name: str, seen: frozenset = frozenset()) -> Any:
        """What a module-level name is bound to: a literal value, a ClassRef, a Module, ..."""
        key = (self.name, name)
        if key in seen:
            raise _CannotEvaluate(f"circular name {name}")
        bindings = self.names.get(name)
        if not bindings:
            raise _CannotEvaluate(f"{name} is not defined in {self.name}")
        errors = []
        # the last binding wins; a fallback in an `except` branch only when nothing else resolves
        ordered = [b for b in reversed(bindings) if not b[1]] + [b for b in reversed(bindings) if b[1]]
        for binding, _ in ordered:
            try:
                return self._binding_value(binding, seen | {key})
            except _CannotEvaluate as exc:
                errors.append(str(exc))
        raise _CannotEvaluate("; ".join(errors))

    def _binding_value(self, binding, seen) -> Any:
        if isinstance(binding, ast.ClassDef):
            return ClassRef(self, binding)
        if isinstance(binding, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return binding
        if isinstance(binding, tuple):
            st, alias = binding
            if isinstance(st, ast.Import):
                target = self.tree.module(alias.name if alias.asname else alias.name.split(".")[0])
                if target is None:
                    raise _CannotEvaluate(f"import {alias.name}: not in the source tree")
                return target
            base = self._import_base(st)
            sub = self.tree.module(f"{base}.{alias.name}" if base else alias.name)
            if sub is not None:
                return sub
            mod = self.tree.module(base)
            if mod is None:
                raise _CannotEvaluate(f"from {base} import {alias.name}: not in the source tree")
            return mod.resolve(alias.name, seen)
        return evaluate(binding, Scope(self), seen)

    def _import_base(self, st: ast.ImportFrom) -> str:
        if not st.level:
            return st.module or ""
        parts = self.name.split(".")
        package = parts if self.is_package else parts[:-1]
        package = package[: len(package) - (st.level - 1)]
        return ".".join(package + ([st.module] if st.module else []))

    # -- finding things ------------------------------------------------------------------
    def cls(self, name: str) -> ClassRef:
        value = self.resolve(name)
        if not isinstance(value, ClassRef):
            raise KeyError(f"{name} is not a class in {self.name}")
        return value

    def function(self, qualname: str) -> ast.AST:
        """A function or method (`Class.method`), or a class body; raises KeyError when absent."""
        node: ast.AST = self.ast
        for part in qualname.split("."):
            found = None
            for st in ast.walk(node):
                if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and st.name == part \
                        and st is not node:
                    found = st
                    break
            if found is None:
                raise KeyError(f"{qualname} not found in {self.rel}")
            node = found
        return node


class Scope:
    """Name lookup: a function's local assignments, then a class body, then the module."""

    def __init__(self, module: Module, cls: ast.ClassDef | None = None, func: ast.AST | None = None):
        self.module, self.cls, self.func = module, cls, func

    def lookup(self, name: str, seen: frozenset) -> Any:
        if self.func is not None:
            key = ("local", id(self.func), name)
            assigns = sorted((st for st in ast.walk(self.func) if isinstance(st, ast.Assign)
                              and any(isinstance(t, ast.Name) and t.id == name for t in st.targets)),
                             key=lambda st: st.lineno)
            if assigns and key not in seen:
                return evaluate(assigns[-1].value, self, seen | {key})
        if self.cls is not None:
            for binding, _ in reversed(_bindings(self.cls.body).get(name, [])):
                if isinstance(binding, ast.expr):
                    try:
                        return evaluate(binding, Scope(self.module, self.cls), seen)
                    except _CannotEvaluate:
                        continue
        return self.module.resolve(name, seen)


def evaluate(node: ast.AST, scope: Scope, seen: frozenset = frozenset()) -> Any:
    """A literal expression's value. Enum members read as their values; a name bound under `if`
    takes its last binding; int()/float()/str()/bool() (and DeepSpeed's pp_int) are applied."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [evaluate(e, scope, seen) for e in node.elts]
        return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise _CannotEvaluate("dict with ** unpacking")
        return {evaluate(k, scope, seen): evaluate(v, scope, seen) for k, v in zip(node.keys, node.values)}
    if isinstance(node, ast.UnaryOp):
        v = evaluate(node.operand, scope, seen)
        ops = {ast.USub: lambda x: -x, ast.UAdd: lambda x: +x, ast.Not: lambda x: not x}
        if type(node.op) in ops:
            return ops[type(node.op)](v)
    if isinstance(node, ast.BinOp):
        a, b = evaluate(node.left, scope, seen), evaluate(node.right, scope, seen)
        ops = {ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y, ast.Mult: lambda x, y: x * y,
               ast.Div: lambda x, y: x / y, ast.FloorDiv: lambda x, y: x // y, ast.Pow: lambda x, y: x ** y,
               ast.Mod: lambda x, y: x % y}
        if type(node.op) in ops:
            try:
                return ops[type(node.op)](a, b)
            except Exception as exc:        # noqa: BLE001 (e.g. str % tuple mismatch)
                raise _CannotEvaluate(str(exc)) from None
    if isinstance(node, ast.Name):
        return scope.lookup(node.id, seen)
    if isinstance(node, ast.Attribute):
        base = evaluate(node.value, scope, seen)
        if isinstance(base, Module):
            return base.resolve(node.attr, seen)
        if isinstance(base, ClassRef):          # an enum member or a class constant: its value
            return _class_attr(base, node.attr, seen)
        raise _CannotEvaluate(ast.unparse(node))
    if isinstance(node, ast.Call):
        fn = node.func
        name = fn.id if isinstance(fn, ast.Name) else None
        if name in _PURE and not node.keywords:
            args = [evaluate(a, scope, seen) for a in node.args]
            return _PURE[name](*args[:1]) if args else _PURE[name]()
        if isinstance(fn, ast.Lambda):
            return evaluate(fn.body, scope, seen)
    if isinstance(node, ast.Lambda) and not node.args.args:
        return evaluate(node.body, scope, seen)
    raise _CannotEvaluate(ast.unparse(node))


def _class_attr(ref: ClassRef, attr: str, seen: frozenset) -> Any:
    for c in mro(ref):
        bindings = _bindings(c.node.body).get(attr)
        if bindings:
            binding = bindings[-1][0]
            if isinstance(binding, ast.ClassDef):
                return ClassRef(c.module, binding)
            if isinstance(binding, ast.AST) and not isinstance(binding, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return evaluate(binding, Scope(c.module, c.node), seen)
    raise _CannotEvaluate(f"{ref.name}.{attr}")


def safe_evaluate(node: ast.AST, scope: Scope) -> Any:
    try:
        return evaluate(node, scope)
    except (_CannotEvaluate, RecursionError):
        return Unresolved(ast.unparse(node))


# -- classes ------------------------------------------------------------------------------

def bases(ref: ClassRef) -> list[ClassRef]:
    """The class's bases that lie in the source tree (pydantic's BaseModel, Enum, object are left out)."""
    out = []
    for b in ref.node.bases:
        try:
            value = evaluate(b, Scope(ref.module))
        except _CannotEvaluate:
            continue
        if isinstance(value, ClassRef):
            out.append(value)
    return out


@functools.cache
def mro(ref: ClassRef) -> tuple[ClassRef, ...]:
    """C3 linearisation over the bases in the tree."""
    seqs = [list(mro(b)) for b in bases(ref)] + [bases(ref)]
    out = [ref]
    while True:
        seqs = [s for s in seqs if s]
        if not seqs:
            return tuple(out)
        for s in seqs:
            head = s[0]
            if not any(head in t[1:] for t in seqs):
                break
        else:                                   # inconsistent (a base outside the tree): depth-first order
            rest = [c for s in seqs for c in s]
            return tuple(out + [c for i, c in enumerate(rest) if c not in rest[:i]])
        out.append(head)
        for s in seqs:
            if s and s[0] == head:
                del s[0]


def is_dataclass(ref: ClassRef) -> bool:
    for d in ref.node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        text = ast.unparse(target)
        if text.split(".")[-1] == "dataclass":
            return True
    return False


_FIELD_CALLS = {"field", "Field"}


def _field_value(value: ast.AST, scope: Scope) -> tuple[Any, str | None]:
    """(default, alias) of a field's right-hand side."""
    if isinstance(value, ast.Call):
        fname = ast.unparse(value.func).split(".")[-1]
        if fname in _FIELD_CALLS:
            kw = {k.arg: k.value for k in value.keywords if k.arg}
            alias = kw.get("alias")
            alias = alias.value if isinstance(alias, ast.Constant) else None
            if "default" in kw:
                return safe_evaluate(kw["default"], scope), alias
            if fname == "Field" and value.args and not (isinstance(value.args[0], ast.Constant)
                                                        and value.args[0].value is Ellipsis):
                return safe_evaluate(value.args[0], scope), alias
            if "default_factory" in kw:
                factory = kw["default_factory"]
                if isinstance(factory, ast.Lambda):
                    return safe_evaluate(factory.body, scope), alias
                try:
                    target = evaluate(factory, scope)
                except _CannotEvaluate:
                    target = None
                if isinstance(target, ClassRef):
                    return Factory(target), alias
                if ast.unparse(factory) in ("list", "dict", "set", "tuple"):
                    return {"list": [], "dict": {}, "set": set(), "tuple": ()}[ast.unparse(factory)], alias
                return Unresolved(ast.unparse(factory) + "()"), alias
            return NO_DEFAULT, alias
    return safe_evaluate(value, scope), None


def own_fields(ref: ClassRef) -> dict[str, FieldInfo]:
    out = {}
    scope = Scope(ref.module, ref.node)
    for st in ref.node.body:
        if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
            if "ClassVar" in ast.unparse(st.annotation):
                continue
            if st.value is None:
                value, alias = NO_DEFAULT, None
            else:
                value, alias = _field_value(st.value, scope)
            out[st.target.id] = FieldInfo(st.target.id, value, ref.module.where(st), alias)
    return out


@functools.cache
def _dataclass_fields(ref: ClassRef) -> dict[str, FieldInfo]:
    # dataclasses._process_class: the bases' __dataclass_fields__ in reverse MRO order, then the class's own
    out: dict[str, FieldInfo] = {}
    for b in reversed(mro(ref)[1:]):
        inherited = _fields_attr(b)
        if inherited is not None:
            out.update(inherited)
    out.update(own_fields(ref))
    return out


def _fields_attr(ref: ClassRef) -> dict[str, FieldInfo] | None:
    """getattr(cls, '__dataclass_fields__'): the first dataclass in the class's MRO."""
    for c in mro(ref):
        if is_dataclass(c):
            return _dataclass_fields(c)
    return None


def fields(ref: ClassRef) -> dict[str, FieldInfo]:
    """A class's fields with their defaults, inherited ones included: dataclass rules for a dataclass,
    attribute lookup (the first class in the MRO that declares it) otherwise (pydantic models)."""
    if is_dataclass(ref):
        return dict(_dataclass_fields(ref))
    out: dict[str, FieldInfo] = {}
    for c in reversed(mro(ref)):
        out.update(own_fields(c))
    return out


def field_of(ref: ClassRef, key: str) -> FieldInfo | None:
    """A field by name or pydantic alias; dotted keys descend through `default_factory=Section`
    fields (torchtitan's JobConfig)."""
    head, _, rest = key.partition(".")
    all_fields = fields(ref)
    info = all_fields.get(head) or next((f for f in all_fields.values() if f.alias == head), None)
    if info is None or not rest:
        return info
    if isinstance(info.value, Factory):
        return field_of(info.value.cls, rest)
    return None


# -- calls --------------------------------------------------------------------------------

def _calls(node: ast.AST) -> Iterator[ast.Call]:
    for n in ast.walk(node):
        if isinstance(n, ast.Call):
            yield n


def get_defaults(module: Module, key: str, scope: str | None = None, receiver: str | None = None) -> list[Found]:
    """Defaults of `<receiver>.get(key, default)` calls (`cfg.get(...)`, `os.environ.get(...)`) in a
    function (or the whole file): the key may be a local expression (`env_prefix + "VERSION"`)."""
    node = module.function(scope) if scope else module.ast
    sc = Scope(module, func=node if scope else None)
    out = []
    for call in _calls(node):
        f = call.func
        if not (isinstance(f, ast.Attribute) and f.attr == "get" and call.args):
            continue
        if receiver is not None and ast.unparse(f.value) != receiver:
            continue
        try:
            k = evaluate(call.args[0], sc)
        except _CannotEvaluate:
            continue
        if k != key:
            continue
        default = call.args[1] if len(call.args) > 1 else next((kw.value for kw in call.keywords
                                                                 if kw.arg == "default"), None)
        out.append(Found(None if default is None else safe_evaluate(default, sc), module.where(call)))
    return out


def argparse_option(module: Module, option: str, scope: str | None = None) -> list[tuple[Found, str]]:
    """(default, help text) of `add_argument(option, ..., default=...)` calls."""
    node = module.function(scope) if scope else module.ast
    sc = Scope(module)
    out = []
    for call in _calls(node):
        if not (isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument"):
            continue
        names = [a.value for a in call.args if isinstance(a, ast.Constant)]
        if option not in names:
            continue
        kw = {k.arg: k.value for k in call.keywords if k.arg}
        default = safe_evaluate(kw["default"], sc) if "default" in kw else None
        help_text = safe_evaluate(kw["help"], sc) if "help" in kw else ""
        out.append((Found(default, module.where(call)), help_text if isinstance(help_text, str) else ""))
    return out


def dict_entries(module: Module, key: str, scope: str | None = None) -> list[Found]:
    """Values of `{key: value}` entries in dict literals (and `dict(key=value)`) in a function."""
    node = module.function(scope) if scope else module.ast
    sc = Scope(module, func=node if scope else None)
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Dict):
            for k, v in zip(n.keys, n.values):
                if isinstance(k, ast.Constant) and k.value == key:
                    out.append(Found(safe_evaluate(v, sc), module.where(k)))
    return out


def assignments(module: Module, target: str, scope: str | None = None) -> list[Found]:
    """Values assigned to `target` (its source text, e.g. `data["fsdp_version"]`) in a function."""
    node = module.function(scope) if scope else module.ast
    sc = Scope(module, func=node if scope else None)
    want = ast.unparse(ast.parse(target, mode="eval").body)
    out = []
    for n in ast.walk(node):
        if isinstance(n, ast.Assign) and any(ast.unparse(t) == want for t in n.targets):
            out.append(Found(safe_evaluate(n.value, sc), module.where(n)))
    return out


def parameter_default(module: Module, func: str, param: str) -> Found | None:
    node = module.function(func)
    args = node.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    pairs = list(zip(positional, defaults)) + list(zip(args.kwonlyargs, args.kw_defaults))
    for a, d in pairs:
        if a.arg == param:
            value = NO_DEFAULT if d is None else safe_evaluate(d, Scope(module))
            return Found(value, module.where(a))
    return None


def calls_to(module: Module, func: str, callee: str) -> list[str]:
    """Where a function calls `callee` (by its last name: `fully_shard(...)`, `x.fully_shard(...)`)."""
    node = module.function(func)
    return [module.where(c) for c in _calls(node) if ast.unparse(c.func).split(".")[-1] == callee]


# -- the source tree ------------------------------------------------------------------------

class SourceTree:
    """Python packages under one or more folders (like sys.path entries), read on demand."""

    def __init__(self, *roots: Path, label: str = "", archive: Path | None = None):
        self.roots = [Path(r) for r in roots]
        self.label = label
        self.archive = archive or self.roots[0]
        self._modules: dict[str, Module | None] = {}

    def rel(self, path: Path) -> str:
        for root in self.roots:
            try:
                return str(path.relative_to(root))
            except ValueError:
                continue
        return str(path)

    def module(self, dotted: str) -> Module | None:
        if not dotted:
            return None
        if dotted not in self._modules:
            self._modules[dotted] = None
            parts = dotted.split(".")
            for root in self.roots:
                file, package = root.joinpath(*parts).with_suffix(".py"), root.joinpath(*parts, "__init__.py")
                if package.is_file():
                    self._modules[dotted] = Module(self, dotted, package, True)
                    break
                if file.is_file():
                    self._modules[dotted] = Module(self, dotted, file, False)
                    break
        return self._modules[dotted]

    def need(self, dotted: str) -> Module:
        mod = self.module(dotted)
        if mod is None:
            raise KeyError(f"module {dotted} not found in {self.label}")
        return mod

    def cls(self, qualname: str) -> ClassRef:
        """`package.module.Class`."""
        mod, _, name = qualname.rpartition(".")
        return self.need(mod).cls(name)

    def json(self, rel: str) -> Any:
        """A JSON file of the release, relative to the unpacked archive (sdist) or the packages."""
        for base in (self.archive, *self.roots):
            path = base / rel
            if path.is_file():
                return json.loads(path.read_text(encoding="utf-8"))
        raise KeyError(f"{rel} not found in {self.label}")


def _roots(name: str) -> tuple[Path, Path]:
    """(the folder holding the release's packages, the unpacked archive's top folder)."""
    pin = PINS[name]
    installed = _installed_root(pin)
    if installed is not None:
        return installed, installed
    top = fetch(name)
    if not pin.packages:
        return top, top
    return top / pin.packages, top / pin.packages.split("/")[0]


# which transformers a framework's argument classes inherit from
_TRANSFORMERS_FOR = {"llamafactory": "transformers-5.8", "trl": "transformers", "swift": "transformers"}


@functools.cache
def tree(name: str) -> SourceTree:
    """The pinned release of a framework as a SourceTree (plus the transformers it builds on)."""
    packages, archive = _roots(name)
    roots = [packages]
    if name in _TRANSFORMERS_FOR:
        roots.append(_roots(_TRANSFORMERS_FOR[name])[0])
    pin = PINS[name]
    return SourceTree(*roots, label=f"{pin.dist} {pin.version}", archive=archive)


def main() -> int:
    failed = 0
    for name, pin in PINS.items():
        try:
            path = fetch(name)
        except SourceUnavailable as exc:
            print(f"{name}: {exc}")
            failed += 1
            continue
        print(f"{name:18} {pin.dist + '==' + pin.version:24} {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
