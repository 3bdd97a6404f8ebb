"""The resource table as a standalone, printable HTML page: title, generation date and trainplan
version, the assumptions every cell shares, the table (one GPU type per sub-row, cells coloured by
fit: one GPU, several, ran as recorded, does not fit), the notes, and the price of each GPU type
with its source and date. Print CSS lays it out on A4 (or Letter) landscape. No scripts, no
external resources: the file is the whole page."""

from __future__ import annotations

import datetime
import html

from trainplan import __version__
from trainplan.i18n import _, language, translate
from trainplan.report.table_text import choice_parts, grid, header, title

TYPE_CHECKING = False
if TYPE_CHECKING:
    from trainplan.planner.table import TableResult

PAPERS = {"a4": "A4 landscape", "letter": "letter landscape"}

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI","Noto Sans CJK SC","Microsoft YaHei",sans-serif;
font-size:13px;color:#1d2330;margin:18px}
h1{font-size:19px;margin:0 0 2px}h2{font-size:14px;margin:14px 0 4px}
.meta{color:#5a6372;margin:0 0 10px}
dl.assumptions{display:grid;grid-template-columns:max-content 1fr;gap:1px 12px;margin:0;background:#f6f7f9;
padding:8px 10px;border:1px solid #dde1e7;border-radius:4px}
dl.assumptions dt{font-weight:600}dl.assumptions dd{margin:0}
table{border-collapse:collapse}
table.resource{width:100%;margin-top:10px}
table.resource th,table.resource td{border:1px solid #c9ced6;padding:3px 6px;vertical-align:top;text-align:left}
table.resource thead th{background:#26324a;color:#fff}
table.resource tbody th{background:#eef1f5}
td.gpu{white-space:nowrap;font-weight:600}
td.cell div{white-space:normal}td.cell .r{color:#4b5565;font-size:12px}
td.one{background:#dcf3e0}td.many{background:#fdf3cf}td.none{background:#f9d9d6;color:#7a211b}
td.ran{background:#d6e6fb}td.na{background:#eee;color:#777}
td.calibrated{box-shadow:inset 3px 0 0 #2f7d8c}
tr.model-start>*{border-top:2px solid #26324a}
.legend span{display:inline-block;padding:1px 8px;margin-right:6px;border:1px solid #c9ced6}
table.prices td,table.prices th{border:1px solid #c9ced6;padding:2px 6px;text-align:left}
ul.notes{margin:4px 0;padding-left:18px}
@media print{body{margin:0;font-size:9.5px}td.cell .r{font-size:9px}
thead{display:table-header-group}tr{break-inside:avoid}
td.one,td.many,td.none,td.ran,td.na,table.resource thead th{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
"""


def _e(text: object) -> str:
    return html.escape("" if text is None else str(text))


def _cell(value: object, max_gpus: int) -> str:
    if value is None:
        return '<td class="cell na">-</td>'
    if isinstance(value, str):
        return f'<td class="cell na" title="{_e(value)}">{_e(_("n/a"))}</td>'
    ch = value
    kind = "ran" if ch.status == "ran" else "none" if ch.status == "none" else "one" if ch.num_gpus == 1 else "many"
    extra = " calibrated" if ch.calibrated else ""
    parts = choice_parts(ch, max_gpus)
    body = "".join(f'<div class="{"nrt"[min(i, 2)]}">{_e(p)}</div>' for i, p in enumerate(parts))
    tip = f' title="{_e(translate(ch.calibrated))}"' if ch.calibrated else ""
    return f'<td class="cell {kind}{extra}"{tip}>{body}</td>'


def _assumptions(result: TableResult) -> str:
    from trainplan.planner.table_rows import assumptions

    rows = "".join(f"<dt>{_e(_(label))}</dt><dd>{_e(_(template).format(**fields))}</dd>"
                   for label, template, fields in assumptions(result.request))
    return f'<h2>{_e(_("Assumptions"))}</h2>\n<dl class="assumptions">{rows}</dl>'


def _prices(result: TableResult) -> str:
    from trainplan.planner.table_rows import price_rows

    heads = ["GPU", _("price per GPU-hour"), _("currency"), _("provider"), _("instance"), _("pricing"), _("source"),
             _("as of")]
    body = []
    for r in price_rows(result.request):
        price = "-" if r["price_per_gpu_hour"] is None else f"{r['price_per_gpu_hour']:,.2f}"
        cells = [r["gpu"], price, r["currency"], r["provider"], r["instance"], r["kind"], r["source"], r["as_of"]]
        body.append("<tr>" + "".join(f"<td>{_e(c if c not in (None, '') else '-')}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{_e(h)}</th>" for h in heads)
    return (f'<h2>{_e(_("Price sources"))}</h2>\n<table class="prices"><thead><tr>{head}</tr></thead><tbody>'
            + "".join(body) + "</tbody></table>")


def render_page(result: TableResult, *, generated: datetime.datetime | None = None, paper: str = "a4") -> str:
    """The whole page (UTF-8 HTML). `generated`: the timestamp printed (default now, UTC)."""
    generated = generated or datetime.datetime.now(datetime.UTC)
    columns, rows = grid(result)
    max_gpus = result.request.max_gpus
    n_gpus = len(result.request.gpus)
    heads = [_("model"), _("params"), "GPU"] + [header(c) for c in columns]
    share = round(78 / max(1, len(columns)), 2)
    colgroup = ('<colgroup><col style="width:9%"><col style="width:5%"><col style="width:8%">'
                + "".join(f'<col style="width:{share}%">' for _c in columns) + "</colgroup>")
    thead = "<tr>" + "".join(f"<th>{_e(h)}</th>" for h in heads) + "</tr>"
    body, last = [], None
    for model, params, gpu, row in rows:
        cells = "".join(_cell(row[c], max_gpus) for c in columns)
        if model != last:
            lead = f'<th rowspan="{n_gpus}">{_e(model)}</th><td rowspan="{n_gpus}">{_e(params)}</td>'
            body.append(f'<tr class="model-start">{lead}<td class="gpu">{_e(gpu)}</td>{cells}</tr>')
        else:
            body.append(f'<tr><td class="gpu">{_e(gpu)}</td>{cells}</tr>')
        last = model
    legend = "".join(f'<span class="{cls}" style="background:{bg}">{_e(_(word))}</span>' for cls, bg, word in (
        ("one", "#dcf3e0", "one GPU"), ("many", "#fdf3cf", "several GPUs"), ("ran", "#d6e6fb", "ran (recorded)"),
        ("none", "#f9d9d6", "does not fit")))
    notes = "".join(f"<li>{_e(translate(n))}</li>" for n in result.notes)
    page_size = PAPERS.get(paper, PAPERS["a4"])
    stamp = _("generated {when} by trainplan {version}").format(
        when=generated.strftime("%Y-%m-%d %H:%M UTC"), version=__version__)
    lang = "zh-CN" if language() == "zh" else "en"
    head_title = title(result)
    return (f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8">\n<title>{_e(head_title)}</title>\n'
            f"<style>@page{{size:{page_size};margin:9mm}}{_CSS}</style></head><body>\n"
            f'<h1>{_e(head_title)}</h1>\n<p class="meta">{_e(stamp)}</p>\n{_assumptions(result)}\n'
            f'<table class="resource">{colgroup}<thead>{thead}</thead>\n<tbody>\n' + "\n".join(body) + "\n</tbody></table>\n"
            f'<p class="legend">{legend}</p>\n'
            + (f'<h2>{_e(_("Notes"))}</h2>\n<ul class="notes">{notes}</ul>\n' if notes else "")
            + f"{_prices(result)}\n</body></html>\n")
