"""The enums built with enum._simple_enum (trainplan.enums.simple_enum, for import speed) are the
enums the class statement builds: each module's source is rebuilt with `class X(StrEnum):` in place
of `@simple_enum(StrEnum) class X:` and compared member by member, attribute by attribute, by the
standard library's own checker (enum._test_simple_enum, what CPython's tests use for re.RegexFlag)."""

from __future__ import annotations

import enum
import importlib
import inspect
import re

import pytest

from trainplan.enums import Method, Precision, ZeroStage

MODULES = ("trainplan.enums", "trainplan.model.architecture", "trainplan.timing.efficiency",
           "trainplan.timing.flops", "trainplan.timing.attention")
_DECORATED = re.compile(r"^@simple_enum\((\w+)\)\nclass (\w+):", re.M)


def _decorated(module_name: str) -> list[tuple[str, str]]:
    source = inspect.getsource(importlib.import_module(module_name))
    return [(name, base) for base, name in _DECORATED.findall(source)]


def _class_statement_twins(module_name: str) -> dict:
    """The module rebuilt from its source with plain class statements (its other names as they are)."""
    module = importlib.import_module(module_name)
    source = _DECORATED.sub(r"class \2(\1):", inspect.getsource(module))
    namespace = {"__name__": module_name}
    exec(compile(source, f"<{module_name} with class statements>", "exec"), namespace)   # noqa: S102
    return namespace


@pytest.mark.parametrize("module_name", MODULES)
def test_simple_enums_equal_class_statement_enums(module_name):
    decorated = _decorated(module_name)
    assert decorated, f"{module_name} has no @simple_enum class"
    module = importlib.import_module(module_name)
    twins = _class_statement_twins(module_name)
    for name, base in decorated:
        simple, checked = getattr(module, name), twins[name]
        assert issubclass(simple, getattr(enum, base))
        enum._test_simple_enum(checked, simple)     # raises TypeError listing every difference
        for member in checked:      # members stored as the class statement stores them (lookup speed)
            assert type(simple.__dict__[member.name]) is simple
            assert type(checked.__dict__[member.name]) is checked


def test_no_class_statement_enums_left_on_the_estimate_path():
    for module_name in MODULES:
        source = inspect.getsource(importlib.import_module(module_name))
        assert not re.search(r"^class \w+\((Str|Int)Enum\):", source, re.M), module_name


def test_members_behave_as_the_values_users_type():
    assert Method("lora") is Method.LORA and f"{Method.LORA}" == "lora" and Method.LORA == "lora"
    assert [m.value for m in Method] == ["full", "lora", "qlora", "freeze"]
    assert Precision.BF16_PURE.is_pure and Precision.FP8.compute_bytes == 2 and Precision.FP16.compute_dtype == "fp16"
    assert ZeroStage(3) > ZeroStage(2) and int(ZeroStage(3)) == 3
    with pytest.raises(ValueError):
        Method("lora2")
