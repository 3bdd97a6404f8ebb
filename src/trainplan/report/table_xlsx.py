"""The resource table as an xlsx workbook (openpyxl, imported only here):
- "table": the printable table (header row, one GPU type per sub-row, wrapped cells coloured by fit,
  frozen panes under the header and right of the GPU column, landscape on one page wide, the
  header repeated on every printed page);
- "data": one row per cell and GPU type, typed numbers with their unit in the column name (GiB, h,
  s, the currency), fits as a boolean, the price with its source and date; filter on the header;
- "assumptions": what every cell shares, the notes, and the price sources.
"""

from __future__ import annotations

import datetime
import io
from pathlib import Path

from trainplan import __version__
from trainplan.errors import TrainplanError
from trainplan.i18n import _, translate
from trainplan.report.table_text import choice_parts, grid, header, title

TYPE_CHECKING = False
if TYPE_CHECKING:
    from trainplan.planner.table import TableResult

FILLS = {"one": "DCF3E0", "many": "FDF3CF", "ran": "D6E6FB", "none": "F9D9D6", "na": "EEEEEE"}


def data_columns(currency: str) -> list[tuple[str, str, str | None]]:
    """(key in table_rows.long_rows, column name with its unit, number format)."""
    return [("model", "model", None), ("params_b", "params (billions)", "0.00"), ("method", "method", None),
            ("quant", "quantization", None), ("precision", "precision", None), ("gpu", "GPU", None),
            ("status", "status", None), ("fits", "fits", None), ("num_gpus", "GPUs", "0"), ("nodes", "nodes", "0"),
            ("engine", "engine", None), ("grad_ckpt", "gradient checkpointing", None),
            ("micro_batch", "micro-batch", "0"), ("grad_accum", "gradient accumulation", "0"),
            ("gib_per_gpu", "memory per GPU (GiB)", "0.00"), ("usable_gib", "usable per GPU (GiB)", "0.00"),
            ("estimate_gib_per_gpu", "estimated per GPU (GiB)", "0.00"), ("step_s", "step (s)", "0.000"),
            ("time_h", "time (h)", "0.00"), ("gpu_hours", "GPU-hours (h)", "0.00"),
            ("cost", f"cost ({currency})", "#,##0.00"), ("price_per_gpu_hour", f"price per GPU-hour ({currency})",
                                                         "0.00"),
            ("price_source", "price source", None), ("price_as_of", "price as_of", None),
            ("calibrated", "calibrated", None), ("measured_at", "measured at", None), ("run_id", "run id", "0"),
            ("note", "note", None)]


def write_table_xlsx(path: str | Path, result: TableResult, *, paper: str = "a4",
                     generated: datetime.datetime | None = None) -> None:
    try:
        from openpyxl import Workbook
        from openpyxl.styles import Alignment, Border, Font, PatternFill, Side
    except ImportError:
        raise TrainplanError("xlsx output needs openpyxl: pip install 'trainplan[xlsx]'") from None
    from trainplan.planner.table_rows import assumptions, long_rows, price_rows

    generated = generated or datetime.datetime.now(datetime.UTC)
    wb = Workbook()
    ws = wb.active
    ws.title = "table"
    thin = Side(style="thin", color="C9CED6")
    border = Border(left=thin, right=thin, top=thin, bottom=thin)
    top = Alignment(wrap_text=True, vertical="top")
    columns, rows = grid(result)
    max_gpus = result.request.max_gpus
    ws.append([title(result)])
    ws["A1"].font = Font(bold=True, size=14)
    ws.append([_("generated {when} by trainplan {version}").format(
        when=generated.strftime("%Y-%m-%d %H:%M UTC"), version=__version__)])
    heads = [_("model"), _("params"), "GPU"] + [header(c) for c in columns]
    ws.append(heads)
    head_row = 3
    for cell in ws[head_row]:
        cell.font = Font(bold=True, color="FFFFFF")
        cell.fill = PatternFill("solid", fgColor="26324A")
        cell.alignment = top
        cell.border = border
    n_gpus = len(result.request.gpus)
    last = None
    starts: list[int] = []
    for model, params, gpu, row in rows:
        values = [model if model != last else None, params if model != last else None, gpu]
        kinds = []
        for c in columns:
            v = row[c]
            if v is None or isinstance(v, str):
                values.append("-" if v is None else _("n/a"))
                kinds.append("na")
            else:
                values.append("\n".join(choice_parts(v, max_gpus)))
                kinds.append("ran" if v.status == "ran" else "none" if v.status == "none"
                             else "one" if v.num_gpus == 1 else "many")
        ws.append(values)
        r = ws.max_row
        for i, cell in enumerate(ws[r]):
            cell.alignment = top
            cell.border = border
            if i >= 3:
                cell.fill = PatternFill("solid", fgColor=FILLS[kinds[i - 3]])
        if model != last:
            ws.cell(row=r, column=1).font = Font(bold=True)
            starts.append(r)
        last = model
    for r in starts if n_gpus > 1 else ():   # after the rows: a merged range moves ws.max_row
        ws.merge_cells(start_row=r, start_column=1, end_row=r + n_gpus - 1, end_column=1)
        ws.merge_cells(start_row=r, start_column=2, end_row=r + n_gpus - 1, end_column=2)
    for letter, width in zip("ABC", (16, 9, 11)):
        ws.column_dimensions[letter].width = width
    for i in range(len(columns)):
        ws.column_dimensions[ws.cell(row=head_row, column=4 + i).column_letter].width = 30
    ws.freeze_panes = ws.cell(row=head_row + 1, column=4)
    ws.print_title_rows = f"{head_row}:{head_row}"
    ws.page_setup.orientation = "landscape"
    ws.page_setup.paperSize = ws.PAPERSIZE_LETTER if paper == "letter" else ws.PAPERSIZE_A4
    ws.page_setup.fitToWidth = 1
    ws.page_setup.fitToHeight = 0
    ws.sheet_properties.pageSetUpPr.fitToPage = True
    ws.print_options.gridLines = False
    ws.page_margins.left = ws.page_margins.right = 0.4

    data = wb.create_sheet("data")
    spec = data_columns(result.request.book.currency)
    data.append([name for _k, name, _f in spec])
    for cell in data[1]:
        cell.font = Font(bold=True)
        cell.alignment = Alignment(wrap_text=True, vertical="top")
    for row in long_rows(result.cells):
        data.append([row.get(k) for k, _n, _f in spec])
        for cell, (_k, _n, fmt) in zip(data[data.max_row], spec):
            if fmt and isinstance(cell.value, int | float) and not isinstance(cell.value, bool):
                cell.number_format = fmt
    for i, (key, name, _f) in enumerate(spec, start=1):
        data.column_dimensions[data.cell(row=1, column=i).column_letter].width = max(9, min(28, len(name) + 2))
    data.freeze_panes = "B2"
    data.auto_filter.ref = data.dimensions

    about = wb.create_sheet("assumptions")
    about.append([_("Assumptions")])
    about["A1"].font = Font(bold=True)
    for label, template, fields in assumptions(result.request):
        about.append([_(label), _(template).format(**fields)])
    if result.notes:
        about.append([])
        about.append([_("Notes")])
        about.cell(row=about.max_row, column=1).font = Font(bold=True)
        for n in result.notes:
            about.append(["", translate(n)])
    about.append([])
    about.append([_("Price sources")])
    about.cell(row=about.max_row, column=1).font = Font(bold=True)
    keys = ["gpu", "price_per_gpu_hour", "currency", "provider", "instance", "kind", "source", "as_of"]
    about.append(keys)
    for r in price_rows(result.request):
        about.append([r[k] for k in keys])
    about.column_dimensions["A"].width = 24
    about.column_dimensions["B"].width = 100
    about.page_setup.orientation = "landscape"

    from trainplan.safeio import write_atomic

    buffer = io.BytesIO()
    wb.save(buffer)
    write_atomic(path, buffer.getvalue(), what="--output")
