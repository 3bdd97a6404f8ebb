"""Tables out: terminal, Markdown, CSV, HTML, JSON and xlsx (openpyxl, loaded only here and only for
xlsx). Every writer takes rows (dicts) and the column order; none computes anything."""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trainplan.errors import TrainplanError
from trainplan.report.tables import format_cell, render_table

FORMATS = ("terminal", "markdown", "csv", "xlsx", "html", "json")


def _text(value: Any) -> str:
    """A cell for the file formats: empty when missing, ints as they are."""
    return format_cell(value, missing="", group_ints=False)


def to_terminal(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    return render_table(list(rows), list(columns))


def to_markdown(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """GitHub-flavoured Markdown; '|' inside a cell is escaped."""
    def cell(value: Any) -> str:
        return _text(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def to_csv(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> str:
    """RFC 4180 CSV with a header row; numbers unformatted, None as an empty field."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow(["" if r.get(c) is None else r.get(c) for c in columns])
    return buf.getvalue()


def to_html(rows: Sequence[dict[str, Any]], columns: Sequence[str], title: str = "") -> str:
    """A standalone HTML page with one table (escaped cells)."""
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "\n".join("<tr>" + "".join(f"<td>{html.escape(_text(r.get(c)))}</td>" for c in columns) + "</tr>"
                     for r in rows)
    caption = f"<caption>{html.escape(title)}</caption>" if title else ""
    style = ("table{border-collapse:collapse;font-family:sans-serif;font-size:14px}"
             "th,td{border:1px solid #bbb;padding:4px 8px;text-align:left}th{background:#eee}")
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title or 'trainplan')}"
            f"</title><style>{style}</style></head><body>\n<table>{caption}\n<thead><tr>{head}</tr></thead>\n"
            f"<tbody>\n{body}\n</tbody></table>\n</body></html>\n")


def to_json(rows: Sequence[dict[str, Any]], columns: Sequence[str] | None = None) -> str:
    data = [{c: r.get(c) for c in columns} for r in rows] if columns else list(rows)
    return json.dumps(data, indent=2, default=str)


def write_xlsx(path: str | Path, sheets: Sequence[tuple[str, Sequence[dict[str, Any]], Sequence[str]]]) -> None:
    """One worksheet per (name, rows, columns), header in bold, columns sized to their text."""
    try:
        from openpyxl import Workbook
        from openpyxl.styles import Font
    except ImportError:
        raise TrainplanError("xlsx output needs openpyxl: pip install 'trainplan[xlsx]'") from None
    wb = Workbook()
    wb.remove(wb.active)
    for name, rows, columns in sheets:
        ws = wb.create_sheet(title=name[:31])
        ws.append(list(columns))
        for cell in ws[1]:
            cell.font = Font(bold=True)
        for r in rows:
            ws.append([r.get(c) for c in columns])
        for i, c in enumerate(columns, start=1):
            width = max([len(str(c))] + [len(_text(r.get(c))) for r in rows])
            ws.column_dimensions[ws.cell(row=1, column=i).column_letter].width = min(80, width + 2)
    import io

    from trainplan.safeio import write_atomic

    buffer = io.BytesIO()
    wb.save(buffer)
    write_atomic(path, buffer.getvalue(), what="--output")   # never through a symlink, onto a FIFO or device


def render(fmt: str, rows: Sequence[dict[str, Any]], columns: Sequence[str], *, title: str = "") -> str:
    """Text formats (all but xlsx)."""
    if fmt == "terminal":
        return (title + "\n" if title else "") + to_terminal(rows, columns)
    if fmt == "markdown":
        return to_markdown(rows, columns)
    if fmt == "csv":
        return to_csv(rows, columns)
    if fmt == "html":
        return to_html(rows, columns, title)
    if fmt == "json":
        return to_json(rows, columns)
    raise TrainplanError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")


def check_format(fmt: str, output: str | None) -> None:
    if fmt not in FORMATS:
        raise TrainplanError(f"--format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    if fmt == "xlsx" and not output:
        raise TrainplanError("--format xlsx writes a file: give --output FILE.xlsx")
    if output:   # before the table is computed: a regular file or a new name in an existing folder
        from trainplan.safeio import check_output_path

        check_output_path(output, what="--output")


def write_text(text: str, output: str) -> None:
    """The table written atomically (safeio.write_atomic)."""
    from trainplan.safeio import write_atomic

    write_atomic(output, text if text.endswith("\n") else text + "\n", what="--output")
