"""Plain-text tables without dependencies."""

from __future__ import annotations

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from typing import Any, Sequence


def format_cell(value: Any, *, missing: str = "-", group_ints: bool = True) -> str:
    """One table cell as text: yes/no, floats to 2 decimals, ints grouped from 10,000 on."""
    if value is None:
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, int) and group_ints:
        return f"{value:,}" if abs(value) >= 10000 else str(value)
    return str(value)


_cell = format_cell


def render_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None,
                 right: Sequence[str] = ()) -> str:
    if not rows:
        return "(no rows)"
    columns = list(columns or rows[0].keys())
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    numeric = {c for c in columns if c in right or all(
        isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in rows if r.get(c) is not None)}

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if col in numeric else v.ljust(w)
                         for v, w, col in zip(values, widths, columns)).rstrip()

    out = [line(columns), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)
