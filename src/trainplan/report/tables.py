"""Plain-text tables without dependencies.

Cells and headers are aligned by their width on a terminal: a CJK character takes two columns
(Unicode East Asian Width W/F), so a table with Chinese headers (--lang zh) lines up too."""

from __future__ import annotations

from trainplan.i18n import _

TYPE_CHECKING = False   # annotations only: typing is not imported on the estimate path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


def format_cell(value: Any, *, missing: str = "-", group_ints: bool = True) -> str:
    """One table cell as text: yes/no (in the current language), floats to 2 decimals, ints grouped
    from 10,000 on."""
    if value is None:
        return missing
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 1e6 else f"{value:,.0f}"
    if isinstance(value, int) and group_ints:
        return f"{value:,}" if abs(value) >= 10000 else str(value)
    return str(value)


_cell = format_cell


def display_width(text: str) -> int:
    """Terminal columns of `text`: 2 for each wide (CJK) character, 1 for the others."""
    if text.isascii():
        return len(text)
    import unicodedata  # only for non-ASCII text

    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _pad(text: str, width: int, right: bool) -> str:
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def render_table(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None,
                 right: Sequence[str] = (), headers: Sequence[str] | None = None) -> str:
    """`rows` under `columns` (the keys; default the first row's), headed by `headers` when given
    (the columns' names for people, e.g. translated), else by the keys."""
    if not rows:
        return _("(no rows)")
    columns = list(columns or rows[0].keys())
    titles = list(headers) if headers is not None else columns
    cells = [[_cell(r.get(c)) for c in columns] for r in rows]
    widths = [max(display_width(t), *(display_width(row[i]) for row in cells)) for i, t in enumerate(titles)]
    numeric = {c for c in columns if c in right or all(
        isinstance(r.get(c), (int, float)) and not isinstance(r.get(c), bool) for r in rows if r.get(c) is not None)}

    def line(values: Sequence[str]) -> str:
        return "  ".join(_pad(v, w, col in numeric) for v, w, col in zip(values, widths, columns)).rstrip()

    out = [line(titles), line(["-" * w for w in widths])]
    out += [line(row) for row in cells]
    return "\n".join(out)
