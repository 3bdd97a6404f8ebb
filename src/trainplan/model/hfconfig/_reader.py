"""Typed reads from a Hugging Face config.json dict, with one-line errors that name the keys."""

from __future__ import annotations

from collections.abc import Mapping

from trainplan.errors import TrainplanError
from trainplan.frozen import frozen

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any

# A key, or several names for one value (the first is the one an error message shows).
Key = str | tuple[str, ...]

_MISSING = object()


def _names(key: Key) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else key


@frozen
class ConfigReader:
    """Reads values the way a transformers config class does: a key that is absent (or null) takes
    the class default given by the caller; the shape keys are required instead (`require`)."""

    config: Mapping[str, Any]
    model_type: str

    def fail(self, message: str) -> TrainplanError:
        return TrainplanError(f"config.json for model_type {self.model_type!r} {message}")

    def has(self, key: Key) -> bool:
        return any(self.config.get(name) is not None for name in _names(key))

    def require(self, *keys: Key) -> None:
        """Raise one error naming every required key that is absent or null."""
        missing = [_names(key)[0] for key in keys if not self.has(key)]
        if missing:
            raise self.fail(f"lacks {', '.join(missing)}")

    def _lookup(self, key: Key) -> tuple[str, Any]:
        for name in _names(key):
            value = self.config.get(name)
            if value is not None:
                return name, value
        return _names(key)[0], _MISSING

    def integer(self, key: Key, default: int | None = None, *, positive: bool = False) -> int:
        value = self.opt_integer(key, default, positive=positive)
        if value is None:
            raise self.fail(f"lacks {_names(key)[0]}")
        return value

    def opt_integer(self, key: Key, default: int | None = None, *,
                    positive: bool = False) -> int | None:
        name, value = self._lookup(key)
        if value is _MISSING:
            return default
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or (positive and value <= 0):
            kind = "a positive integer" if positive else "an integer"
            raise self.fail(f"has {name} = {value!r}; expected {kind}")
        return value

    def flag(self, key: Key, default: bool) -> bool:
        name, value = self._lookup(key)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            raise self.fail(f"has {name} = {value!r}; expected true or false")
        return value

    def string(self, key: Key, default: str) -> str:
        name, value = self._lookup(key)
        if value is _MISSING:
            return default
        if not isinstance(value, str):
            raise self.fail(f"has {name} = {value!r}; expected a string")
        return value

    def integers(self, key: str) -> tuple[int, ...]:
        value = self.config.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool)
                                                  for v in value):
            raise self.fail(f"has {key} = {value!r}; expected a list of integers")
        return tuple(value)

    def window(self, key: str, default: int | None) -> int | None:
        """A sliding window: absent -> the class default, explicit null -> no window."""
        if key not in self.config:
            return default
        return self.opt_integer(key)
