"""trainplan.frozen records behave as @dataclass(frozen=True, kw_only=True) does: the same fields,
defaults, factories, equality, hashing, repr, refusals, replace/asdict/fields; whether a class is
built by the interpreted __init__ or the compiled one."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainplan import frozen as fz


@fz.frozen
class Part:
    name: str
    size: int = 1
    tags: tuple[str, ...] = ()


@fz.frozen
class Whole:
    """A record holding records, a dict from a factory, and validation."""

    part: Part
    parts: tuple[Part, ...] = ()
    extra: dict[str, int] = fz.field(default_factory=dict)
    ratio: float = 0.5

    def __post_init__(self) -> None:
        if not 0 <= self.ratio <= 1:
            raise ValueError(f"ratio {self.ratio} out of [0, 1]")


@dataclasses.dataclass(frozen=True, kw_only=True)
class DPart:
    name: str
    size: int = 1
    tags: tuple[str, ...] = ()


@fz.mutable
class Tally:
    count: int = 0
    seen: list[str] = fz.field(default_factory=list)


names = st.text(min_size=0, max_size=8)
sizes = st.integers(-10**6, 10**6)
tags = st.tuples(*[names] * 2)


@given(name=names, size=sizes, tags=tags)
@settings(max_examples=60, deadline=None)
def test_same_semantics_as_a_frozen_dataclass(name, size, tags):
    ours, theirs = Part(name=name, size=size, tags=tags), DPart(name=name, size=size, tags=tags)
    assert repr(ours) == repr(theirs).replace("DPart(", "Part(")
    assert hash(ours) == hash(Part(name=name, size=size, tags=tags)) == hash((name, size, tags))
    assert hash(theirs) == hash((name, size, tags))
    assert ours == Part(name=name, size=size, tags=tags) and ours != Part(name=name + "x", size=size, tags=tags)
    assert fz.asdict(ours) == dataclasses.asdict(theirs)
    assert [f.name for f in fz.fields(ours)] == [f.name for f in dataclasses.fields(theirs)]
    assert fz.replace(ours, size=size + 1) == Part(name=name, size=size + 1, tags=tags)


def test_init_defaults_factories_and_refusals():
    w = Whole(part=Part(name="a"))
    assert w.parts == () and w.extra == {} and w.ratio == 0.5
    assert Whole(part=Part(name="a")).extra is not w.extra          # a fresh dict per instance
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'part'"):
        Whole()
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        Part(name="a", colour="red")
    with pytest.raises(TypeError):
        Part("a")                                                   # keyword-only
    with pytest.raises(ValueError, match="ratio 2 out of"):
        Whole(part=Part(name="a"), ratio=2)                         # __post_init__ runs
    with pytest.raises(fz.FrozenInstanceError):
        w.ratio = 0.1
    with pytest.raises(AttributeError):                             # FrozenInstanceError is one
        del w.part
    with pytest.raises(ValueError, match="ratio -1"):
        fz.replace(w, ratio=-1)                                     # validation runs again
    with pytest.raises(TypeError, match="no field 'colour'"):
        fz.replace(w, colour=1)
    assert fz.asdict(Whole(part=Part(name="a"), parts=(Part(name="b", size=2),), extra={"k": 1})) == \
        {"part": {"name": "a", "size": 1, "tags": ()}, "parts": ({"name": "b", "size": 2, "tags": ()},),
         "extra": {"k": 1}, "ratio": 0.5}


def test_every_record_shares_one_init_and_builds_no_code():
    @fz.frozen
    class Hot:
        x: int = 0

    for i in range(100):
        assert Hot(x=i).x == i
    assert Hot.__init__ is fz._init and Whole.__init__ is fz._init and Tally.__init__ is fz._init


def test_mutable_records_and_refused_defaults():
    t = Tally()
    t.count += 1
    t.seen.append("x")
    assert t == Tally(count=1, seen=["x"]) and Tally().seen == []
    with pytest.raises(TypeError):
        hash(t)
    with pytest.raises(ValueError, match="mutable default list"):
        @fz.frozen
        class Bad:
            items: list = []


def test_hash_is_kept_but_never_pickled_or_copied():
    import copy
    import pickle

    p = Part(name="a", size=3, tags=("x",))
    assert hash(p) == hash(("a", 3, ("x",))) == hash(p)          # computed once, then read back
    assert "__record_hash__" in p.__dict__
    for twin in (pickle.loads(pickle.dumps(p)), copy.copy(p), copy.deepcopy(p)):
        assert twin == p and "__record_hash__" not in twin.__dict__ and hash(twin) == hash(p)
    assert fz.asdict(p) == {"name": "a", "size": 3, "tags": ("x",)}
    assert fz.replace(p, size=4) == Part(name="a", size=4, tags=("x",))
