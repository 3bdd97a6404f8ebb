"""Frozen, keyword-only records: what `@dataclass(frozen=True, kw_only=True)` gives, at a cost a
one-shot `trainplan estimate` can pay; and `by_identity`, a memo over records (end of the module).

Why not `dataclasses` itself: on Python 3.11 `import dataclasses` imports `inspect` (~7 ms), and
every decorated class compiles six methods when its module is imported (~0.4 ms a class, measured
in benchmarks/estimate_speed.py's notes): the ~50 records of an estimate would cost 25 ms of a
~30 ms budget. Here a class costs ~15 us: `__eq__`, `__hash__`, `__repr__`, `__setattr__` and
`__delattr__` are shared functions over the class's field names, and so is `__init__` (keyword-only,
defaults, default factories, then `__post_init__`): it stores into the instance dict, faster than a
compiled per-class `__init__` (an earlier version compiled one after 32 instances: 31 compiles, 3 ms of
a plan's first 30 ms, for slower inits).

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


_HASH = "__record_hash__"     # where a frozen record keeps its hash once computed (never pickled)


def _hash(self: Any) -> int:
    """The hash of the field tuple, computed once per record (its fields never change): the planner
    looks records up in dicts thousands of times a plan, and each hash rebuilt the field tuple and
    hashed the records inside it (a TrainingSetup's ModelSpec alone has ~40 fields)."""
    values = self.__dict__
    cached = values.get(_HASH)
    if cached is None:
        cached = values[_HASH] = hash(self.__record_values__(self))
    return cached


def _getstate(self: Any) -> dict[str, Any]:
    """The fields for pickle and copy, without the cached hash (str hashes differ between processes)."""
    state = self.__dict__
    return {k: v for k, v in state.items() if k != _HASH} if _HASH in state else state


def _repr(self: Any) -> str:
    inner = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.__record_fields__)
    return f"{type(self).__qualname__}({inner})"


def _init(self: Any, **kwargs: Any) -> None:
    """Every record's __init__ (keyword-only): the plain defaults, then the keywords, then the default
    factories of fields not given, then __post_init__; checked by count (a missing or unknown keyword
    leaves the instance dict at the wrong size or with a name that is no field). One shared function
    over tables made at decoration: dict.update stores are faster than the per-class __init__
    dataclasses compiles (object.__setattr__ per field), and nothing is compiled at run time."""
    cls = type(self)
    values = self.__dict__        # records have no __slots__: fields live in the instance dict
    values.update(cls.__record_defaults__)
    values.update(kwargs)
    for name, factory in cls.__record_factories__:
        if name not in kwargs:
            values[name] = factory()
    if len(values) != cls.__record_size__ or not kwargs.keys() <= cls.__record_names__:
        values.clear()
        _refuse(cls, kwargs)
    post = cls.__dict__.get("__record_post__", _UNSET)
    if post is _UNSET:            # a subclass that is not itself a record: look its __post_init__ up
        post = getattr(cls, "__post_init__", None)
    if post is not None:
        post(self)


_UNSET = object()


def _refuse(cls: type, kwargs: dict[str, Any]) -> None:
    """The TypeError dataclasses' __init__ raises for these keywords (the first missing field, else
    the first unknown keyword)."""
    for f in cls.__record_fields__:
        if f.name not in kwargs and f.default is MISSING and f.default_factory is MISSING:
            raise TypeError(f"{cls.__qualname__}.__init__() missing 1 required keyword-only argument: {f.name!r}")
    unknown = next(k for k in kwargs if k not in cls.__record_names__)
    raise TypeError(f"{cls.__qualname__}.__init__() got an unexpected keyword argument {unknown!r}")


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
    cls.__record_defaults__ = {f.name: f.default for f in fields_
                               if f.default is not MISSING and f.default_factory is MISSING}
    cls.__record_factories__ = tuple((f.name, f.default_factory) for f in fields_ if f.default_factory is not MISSING)
    cls.__record_size__ = len(fields_)
    cls.__record_names__ = frozenset(names)
    cls.__record_post__ = getattr(cls, "__post_init__", None)
    cls.__init__ = _init
    cls.__repr__ = _repr
    cls.__eq__ = _eq
    if frozen:
        cls.__setattr__ = _frozen_setattr
        cls.__delattr__ = _frozen_delattr
        cls.__hash__ = _hash
        cls.__getstate__ = _getstate
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
