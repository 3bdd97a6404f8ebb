"""What every command module shares: JSON out, comma lists in."""

from __future__ import annotations

import json

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any


def print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def csv_list(value: str | None) -> tuple[str, ...]:
    """'a, b,,c' -> ('a', 'b', 'c'); None or '' -> ()."""
    return tuple(v.strip() for v in value.split(",") if v.strip()) if value else ()
