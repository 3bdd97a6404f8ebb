"""What every command module shares: JSON out, comma lists in."""

from __future__ import annotations

import json

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any


def print_json(obj: Any) -> None:
    """Strict JSON: NaN or Infinity anywhere is a bug upstream (validation lets none through), so it
    fails here (ValueError) instead of printing what no JSON parser reads."""
    print(json.dumps(obj, indent=2, default=str, allow_nan=False))


def csv_list(value: str | None) -> tuple[str, ...]:
    """'a, b,,c' -> ('a', 'b', 'c'); None or '' -> ()."""
    return tuple(v.strip() for v in value.split(",") if v.strip()) if value else ()
