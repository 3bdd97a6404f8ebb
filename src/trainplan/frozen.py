"""Frozen, keyword-only records: what `@dataclass(frozen=True, kw_only=True)` gives, at a cost a
one-shot `trainplan estimate` can pay; and `by_identity`, a memo over records (end of the module).

Why not `dataclasses` itself: on Python 3.11 `import dataclasses` imports `inspect` (~7 ms), and
every decorated class compiles six methods when its module is imported (~0.4 ms a class, measured
in benchmarks/estimate_speed.py's notes): the ~50 records of an estimate would cost 25 ms of a
~30 ms budget. Here a class costs ~15 us: `__eq__`, `__hash__`, `__repr__`, `__setattr__` and
`__delattr__` are shared functions over the class's field names, and `__init__` (keyword-only,
defaults, default factories, then `__post_init__`) is compiled the first time the class is
instantiated, so records a run never builds never pay for it.

Semantics follow dataclasses (tests/test_frozen.py compares the two): fields are the annotated
class attributes in definition order (bases first); equality compares field tuples of the same
class; frozen records hash their field tuple and refuse assignment (FrozenInstanceError, an
AttributeError); a mutable default (list, dict, set) is refused; `replace`, `fields` and `asdict`
behave as their dataclasses namesakes.
"""

from __future__ import annotations

import functools
from operator import attrgetter

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Field", "FrozenInstanceError", "asdict", "by_identity", "field", "fields", "frozen", "is_record", "mutable",
           "replace"]

MISSING: Any = type("MISSING", (), {"__repr__": lambda self: "MISSING"})()


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record."""


class Field:
    """One field: its name, default and default factory (MISSING when none)."""

    __slots__ = ("name", "default", "default_factory")

    def __init__(self, name: str = "", default: Any = MISSING, default_factory: Any = MISSING) -> None:
        self.name, self.default, self.default_factory = name, default, default_factory

    def __repr__(self) -> str:
        return f"Field(name={self.name!r}, default={self.default!r}, default_factory={self.default_factory!r})"


def field(*, default: Any = MISSING, default_factory: Any = MISSING) -> Any:
    """A field with a default (as dataclasses.field; give one of the two)."""
    if default is not MISSING and default_factory is not MISSING:
        raise ValueError("cannot specify both default and default_factory")
    return Field(default=default, default_factory=default_factory)


# --- shared methods ---------------------------------------------------------------------------------

def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r} of a frozen {type(self).__name__}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r} of a frozen {type(self).__name__}")


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        return self.__record_values__(self) == other.__record_values__(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(self.__record_values__(self))


def _repr(self: Any) -> str:
    inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.__record_fields__)
    return f"{type(self).__qualname__}({inner})"


def _compile_init(cls: type) -> Any:
    """The __init__ dataclasses would write for this class (keyword-only)."""
    namespace: dict[str, Any] = {"__setattr": object.__setattr__, "__MISSING": MISSING}
    params, body = [], []
    for f in cls.__record_fields__:
        n = f.name
        if f.default_factory is not MISSING:
            namespace[f"__factory_{n}"] = f.default_factory
            params.append(f"{n}=__MISSING")
            value = f"__factory_{n}() if {n} is __MISSING else {n}"
        elif f.default is not MISSING:
            namespace[f"__default_{n}"] = f.default
            params.append(f"{n}=__default_{n}")
            value = n
        else:
            params.append(n)
            value = n
        body.append(f"    __setattr(self, {n!r}, {value})" if cls.__record_frozen__ else f"    self.{n} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    star = "*, " if params else ""
    source = f"def __init__(self, {star}{', '.join(params)}):\n" + ("\n".join(body) or "    pass")
    local: dict[str, Any] = {}
    exec(source, namespace, local)   # noqa: S102 - generated from the class's own field names
    init = local["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


COMPILE_AFTER = 32     # instances built by the generic __init__ before the class gets a compiled one
_BUILT: dict[type, int] = {}


def _generic_init(self: Any, cls: type, kwargs: dict[str, Any]) -> None:
    """What the compiled __init__ does, interpreted: no compile for a class built a few times."""
    values = self.__dict__        # records have no __slots__: fields live in the instance dict
    used = 0
    for f in cls.__record_fields__:
        name = f.name
        if name in kwargs:
            values[name] = kwargs[name]
            used += 1
        elif f.default_factory is not MISSING:
            values[name] = f.default_factory()
        elif f.default is not MISSING:
            values[name] = f.default
        else:
            raise TypeError(f"{cls.__qualname__}.__init__() missing 1 required keyword-only argument: {name!r}")
    if used != len(kwargs):
        unknown = next(k for k in kwargs if k not in values)
        raise TypeError(f"{cls.__qualname__}.__init__() got an unexpected keyword argument {unknown!r}")
    if hasattr(self, "__post_init__"):
        self.__post_init__()


def _lazy_init(self: Any, **kwargs: Any) -> None:
    cls = type(self)
    declared = next(k for k in cls.__mro__ if k.__dict__.get("__init__") is _lazy_init)
    built = _BUILT.get(declared, 0) + 1
    if built < COMPILE_AFTER:      # a one-shot command builds most records a handful of times
        _BUILT[declared] = built
        _generic_init(self, declared, kwargs)
        return
    declared.__init__ = _compile_init(declared)
    type(self).__init__(self, **kwargs)


def _is_classvar(annotation: Any) -> bool:
    text = annotation if isinstance(annotation, str) else repr(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def _record(cls: type, *, frozen: bool) -> type:
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in getattr(base, "__record_fields__", ()):
            found[f.name] = f
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if _is_classvar(annotation):
            continue
        value = cls.__dict__.get(name, MISSING)
        if isinstance(value, Field):
            f = Field(name, value.default, value.default_factory)
        else:
            f = Field(name, value)
        if isinstance(f.default, (list, dict, set)):
            raise ValueError(f"mutable default {type(f.default).__name__} for field {name} of {cls.__name__}: "
                             "use field(default_factory=...)")
        if value is not MISSING:
            if f.default is MISSING:
                delattr(cls, name)        # a factory: no class attribute, as dataclasses does
            else:
                setattr(cls, name, f.default)
        found[name] = f
    fields_ = tuple(found.values())
    cls.__record_fields__ = fields_
    cls.__record_frozen__ = frozen
    names = tuple(f.name for f in fields_)
    if len(names) > 1:
        cls.__record_values__ = staticmethod(attrgetter(*names))
    elif names:
        one = attrgetter(names[0])
        cls.__record_values__ = staticmethod(lambda obj: (one(obj),))
    else:
        cls.__record_values__ = staticmethod(lambda obj: ())
    cls.__init__ = _lazy_init
    cls.__repr__ = _repr
    cls.__eq__ = _eq
    if frozen:
        cls.__setattr__ = _frozen_setattr
        cls.__delattr__ = _frozen_delattr
        cls.__hash__ = _hash
    else:
        cls.__hash__ = None
    return cls


def frozen(cls: type) -> type:
    """Decorator: a frozen, keyword-only record (see the module docstring)."""
    return _record(cls, frozen=True)


def mutable(cls: type) -> type:
    """Decorator: a keyword-only record whose fields may be assigned (unhashable), for accumulators."""
    return _record(cls, frozen=False)


# --- functions over records -----------------------------------------------------------------------------

def is_record(obj: Any) -> bool:
    return hasattr(obj, "__record_fields__")


def fields(obj: Any) -> tuple[Field, ...]:
    """The fields of a record (instance or class), in order."""
    try:
        return obj.__record_fields__
    except AttributeError:
        raise TypeError(f"{type(obj).__name__} is not a record") from None


def replace(obj: Any, /, **changes: Any) -> Any:
    """A new record with `changes` applied; validation (__post_init__) runs again."""
    try:
        names = obj.__record_fields__
    except AttributeError:
        raise TypeError(f"replace() needs a record, got {type(obj).__name__}") from None
    values = obj.__dict__
    kwargs = {f.name: values[f.name] for f in names}
    for key in changes:
        if key not in kwargs:
            raise TypeError(f"{type(obj).__name__} has no field {key!r}")
    kwargs.update(changes)
    return obj.__class__(**kwargs)


_ATOMS = (str, int, float, bool, type(None), bytes, complex)


def _plain(value: Any) -> Any:
    if isinstance(value, _ATOMS):
        return value
    if is_record(value):
        return {f.name: _plain(getattr(value, f.name)) for f in value.__record_fields__}
    if isinstance(value, tuple) and hasattr(value, "_fields"):
        return type(value)(*(_plain(v) for v in value))
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_plain(k), _plain(v)) for k, v in value.items())
    import copy

    return copy.deepcopy(value)


def asdict(obj: Any) -> dict[str, Any]:
    """The record as nested dicts (records inside too; lists, tuples and dicts copied), as dataclasses.asdict."""
    if not is_record(obj):
        raise TypeError(f"asdict() needs a record, got {type(obj).__name__}")
    return _plain(obj)


# --- memoising functions of records ---------------------------------------------------------------
# GpuSpec and TimingOptions hold dicts (peak FLOP/s per dtype, the efficiency model's kappa), so they do
# not hash, and hashing a TrainingSetup rebuilds its field tuple, the model's ~40 fields included (~1.7 us,
# a fortieth of an estimate). The planner passes the same record objects to many estimates, so
# `by_identity` caches key the records on their identity: each entry keeps the records it was computed
# from alive, so while it exists no other object can have their ids, and a key that matches names the
# same objects. Records are frozen: the same objects give the same result. Equal but distinct records
# (a case reader building its own) only miss the cache.

def by_identity(records: int, limit: int = 1024) -> Any:
    """Decorator: memoise fn(r_1, ..., r_records, *values) on the identity of its first `records`
    arguments and the value of the rest (hashable), positional arguments only. At `limit` entries the
    cache starts again (a plan fills a few hundred)."""
    def wrap(fn: Any) -> Any:
        entries: dict[tuple, tuple[Any, tuple]] = {}

        @functools.wraps(fn)
        def cached(*args: Any) -> Any:
            key = (id(args[0]), id(args[1]), *args[2:]) if records == 2 else (*map(id, args[:records]), *args[records:])
            hit = entries.get(key)
            if hit is None:
                if len(entries) >= limit:
                    entries.clear()
                hit = entries[key] = (fn(*args), args[:records])   # the records stay alive with the entry
            return hit[0]

        cached.cache_clear = entries.clear   # type: ignore[attr-defined]
        return cached
    return wrap
