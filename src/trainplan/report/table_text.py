"""The resource table for people as text: each cell's words, the terminal table (one GPU type per
sub-row, cells wrapped to fit `width` columns, 120 by default) and the Markdown table for wikis,
with the assumptions and notes under them. Words go through the catalog (--lang zh)."""

from __future__ import annotations

import re
from typing import Any

from trainplan.i18n import _, translate
from trainplan.model.params import count_params
from trainplan.report.tables import display_width
from trainplan.units import gib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from trainplan.planner.table import Choice, TableResult

WIDTH = 120


def short_gpu(gpu_id: str) -> str:
    return gpu_id.replace("-sxm4", "").replace("-sxm", "").replace("-pcie", "").replace("rtx", "")


def money(value: float, currency: str) -> str:
    return f"{value:,.{0 if value >= 100 else 2}f} {currency}"


def choice_parts(ch: Choice, max_gpus: int) -> list[str]:
    """The cell's words on one GPU type: [GPUs and memory per GPU, time and cost, the recipe]."""
    if ch.status == "none":
        return [_("does not fit on {n} GPUs").format(n=max_gpus)]
    mem = f"{gib(ch.device_bytes):.1f} GiB"
    if ch.status == "ran":
        head = _("ran: x{n}, {mem} measured {date}").format(n=ch.num_gpus, mem=mem, date=ch.measured_at)
    else:
        head = f"x{ch.num_gpus}, {mem}" + (" " + _("(calibrated)") if ch.calibrated else "")
    parts = [head]
    if ch.time_s is not None:
        parts.append(f"{ch.time_s / 3600:,.1f} h" + ("" if ch.cost is None else f", {money(ch.cost, ch.currency)}"))
    recipe = [] if ch.engine in ("", "single GPU") else [translate(ch.engine)]
    if ch.grad_ckpt and ch.grad_ckpt != "none":
        recipe.append(_("ckpt"))
    if ch.batch_size:
        recipe.append(_("mb {mb}x{accum}").format(mb=ch.batch_size, accum=ch.grad_accum))
    parts.append(", ".join(recipe))
    return [p for p in parts if p]


def choice_text(ch: Choice, max_gpus: int) -> str:
    return "; ".join(choice_parts(ch, max_gpus))


def _cut(word: str, width: int) -> list[str]:
    """A word wider than `width` in pieces of at most `width` columns."""
    out, cur = [], ""
    for ch in word:
        if display_width(cur + ch) > width:
            out.append(cur)
            cur = ""
        cur += ch
    return out + [cur]


def _wrap(parts: list[str], width: int) -> list[str]:
    """Parts joined with '; ' into lines of at most `width` columns; a part too wide breaks after its
    commas, then after spaces, and a word too wide is cut."""
    lines: list[str] = []
    for part in parts:
        pieces = [p for p in re.split(r"(?<= )", part) if p]
        cur = ""
        for piece in pieces:
            if display_width(cur + piece.rstrip()) <= width:
                cur += piece
                continue
            if cur:
                lines.append(cur.rstrip())
            cut = _cut(piece.rstrip(), width)
            lines += cut[:-1]
            cur = cut[-1] + (" " if piece.endswith(" ") else "")
        cur = cur.rstrip()
        if lines and display_width(lines[-1] + "; " + cur) <= width and len(pieces) == 1 and not part.startswith(" "):
            lines[-1] += "; " + cur
        elif cur:
            lines.append(cur)
    return lines or [""]


def grid(result: TableResult) -> tuple[list[str], list[tuple[str, str, str, dict[str, Any]]]]:
    """(the method/precision columns, sub-rows (model, params, GPU, {column: Choice or reason}))."""
    from trainplan.planner.table_rows import columns_of

    columns = columns_of(result.cells)
    models: dict[str, dict[str, Any]] = {}
    for c in result.cells:
        models.setdefault(c.model.name, {"params": f"{count_params(c.model).total / 1e9:.1f}B", "cells": {}})
        models[c.model.name]["cells"][c.column] = c
    rows = []
    for name, m in models.items():
        for i, gpu in enumerate(result.request.gpus):
            row = {}
            for col in columns:
                c = m["cells"].get(col)
                row[col] = None if c is None else (c.choices[i] if c.choices else c.reason or "n/a")
            rows.append((name, m["params"], short_gpu(gpu.id), row))
    return columns, rows


def method_name(method: str) -> str:
    """The method as the column header names it: its catalog name ('{method} fine-tune') under
    --lang zh, the flag's word in English."""
    msgid = f"{method} fine-tune"
    name = _(msgid)
    return method if name == msgid else name


def header(col: str) -> str:
    method, _sep, rest = col.partition(" ")
    return f"{method_name(method)} {rest}".strip()


def _lines(value: Any, max_gpus: int) -> list[str]:
    if value is None:
        return ["-"]
    if isinstance(value, str):
        return [_("n/a")]
    return choice_parts(value, max_gpus)


def to_terminal(result: TableResult, width: int = WIDTH) -> str:
    """One GPU type per sub-row; every line at most `width` display columns."""
    columns, rows = grid(result)
    max_gpus = result.request.max_gpus
    left = [_("model"), "GPU"]
    w_model = max([display_width(left[0])] + [display_width(f"{r[0]} {r[1]}") for r in rows])
    w_model = min(w_model, 24)
    w_gpu = max([display_width(left[1])] + [display_width(r[2]) for r in rows])
    free = width - 4 - w_model - w_gpu - 3 * (len(columns) + 1)
    w_cell = max(12, free // max(1, len(columns)))
    natural = max([display_width(header(c)) for c in columns]
                  + [display_width(p) + 2 for r in rows for v in r[3].values() for p in _lines(v, max_gpus)] + [12])
    w_cell = min(w_cell, natural)

    def pad(text: str, w: int) -> str:
        return text + " " * max(0, w - display_width(text))

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    widths = [w_model, w_gpu] + [w_cell] * len(columns)
    out = [line([pad(h, w) for h, w in zip(left + [header(c) for c in columns], widths)]),
           "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    last = None
    for model, params, gpu, row in rows:
        cells = [_wrap(_lines(row[c], max_gpus), w_cell) for c in columns]
        first = [f"{model} {params}" if model != last else "", gpu]
        first = [_wrap([first[0]], w_model)[0] if first[0] else "", first[1]]
        if model != last and last is not None:
            out.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
        last = model
        for k in range(max(len(x) for x in cells)):
            out.append(line([pad(first[0] if k == 0 else "", w_model), pad(gpu if k == 0 else "", w_gpu)]
                            + [pad(x[k] if k < len(x) else "", w_cell) for x in cells]))
    return "\n".join(out)


def assumption_lines(result: TableResult) -> list[str]:
    from trainplan.planner.table_rows import assumptions

    return [f"{_(label)}: {_(template).format(**fields)}" for label, template, fields in
            assumptions(result.request)]


def title(result: TableResult) -> str:
    return _("Resource table: GPUs needed, memory per GPU at that count, time and cost")


def render_text(result: TableResult, width: int = WIDTH) -> str:
    """The terminal table with its assumptions and notes (every line <= `width` columns)."""
    import textwrap

    body = [title(result), to_terminal(result, width), "", _("Assumptions") + ":"]
    for text in assumption_lines(result) + [translate(n) for n in result.notes]:
        body += textwrap.wrap(text, width=width, initial_indent="- ", subsequent_indent="  ") if text.isascii() \
            else _wrap_wide("- " + text, width)
    return "\n".join(body)


def _wrap_wide(text: str, width: int) -> list[str]:
    out, cur = [], ""
    for ch in text:
        if display_width(cur + ch) > width:
            out.append(cur)
            cur = "  "
        cur += ch
    return out + [cur]


def to_markdown(result: TableResult) -> str:
    """GitHub-flavoured Markdown: one GPU type per row, the model on its first row; assumptions below."""
    columns, rows = grid(result)
    max_gpus = result.request.max_gpus

    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    heads = [_("model"), _("params"), "GPU"] + [header(c) for c in columns]
    out = ["| " + " | ".join(heads) + " |", "|" + "|".join("---" for _h in heads) + "|"]
    last = None
    for model, params, gpu, row in rows:
        lead = [model, params] if model != last else ["", ""]
        last = model
        out.append("| " + " | ".join(lead + [gpu] + [esc("; ".join(_lines(row[c], max_gpus))) for c in columns])
                   + " |")
    out += ["", f"**{_('Assumptions')}**", ""] + [f"- {esc(t)}" for t in assumption_lines(result)]
    out += [f"- {esc(translate(n))}" for n in result.notes]
    return "\n".join(out)
