"""/api/table's answers: the resource table of `trainplan table` through the same library and the
same writers, so that a download is the file `trainplan table --format X --output FILE` writes for
the same options (HTML: report/table_page.py, XLSX: report/table_xlsx.py, Markdown:
report/table_text.py, CSV: the records of `--json`), and the JSON view carries those records
(`cells`, English, as `--json`) with the table as the printed page lays it out (`rows`: one GPU
type per sub-row, each cell's words in the language asked). Nothing is computed here.

The writers read the process's language (trainplan.i18n); a request's `lang` is set for the time
of its writing only, under a lock, and the language before it is put back. Only these writers
print translated text in the server (the other answers are the library's English to_dict()).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterator
from typing import Any

from trainplan import i18n
from trainplan.web.params import TableSetup, check_model_name, names, setup_keywords

MEDIA = {"csv": "text/csv; charset=utf-8", "html": "text/html; charset=utf-8",
         "markdown": "text/markdown; charset=utf-8",
         "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"}
SUFFIX = {"csv": "csv", "html": "html", "markdown": "md", "xlsx": "xlsx"}

_LANGUAGE = threading.Lock()


def language_of(lang: str | None) -> str:
    """'en' or 'zh' ('en' when not given: the server's locale is not the reader's); a bad one is a
    TrainplanError (400)."""
    return i18n.normalize(lang) if lang else "en"


@contextlib.contextmanager
def in_language(lang: str | None) -> Iterator[str]:
    """The writers' language for one request, the process's own put back afterwards."""
    code = language_of(lang)
    with _LANGUAGE:
        saved = i18n.current_state()
        i18n.set_language(code)
        try:
            yield code
        finally:
            i18n.restore_language(saved)


def table_request(q: TableSetup, ledger: str | None) -> Any:
    """The TableRequest of `trainplan table` with these options (cli/table.py's _table_request);
    `ledger` is the server's (serve --db, $TRAINPLAN_DB), read as the CLI reads --db."""
    from trainplan.api import options_of
    from trainplan.planner import table

    check_model_name(q.model)
    models = names(q.models)
    for m in models:
        check_model_name(m)
    options = options_of(q.model, setup_keywords(q), need_model=False)
    methods = names(q.methods)
    return table.resolve_table(options, models=models, sizes=names(q.sizes),
                               methods=methods or table.DEFAULT_METHODS, precisions=names(q.precisions),
                               quants=names(q.quants), gpus=names(q.gpus) or table.DEFAULT_GPUS,
                               max_gpus=q.max_gpus, gpus_per_node=q.gpus_per_node, global_batch=q.global_batch,
                               db=ledger)


def plain(value: Any) -> Any:
    """As `--json` prints it (dates and the like as strings; NaN is a bug upstream and fails)."""
    return json.loads(json.dumps(value, default=str, allow_nan=False))


def _kind(choice: Any) -> str:
    """The fit colour of a cell on one GPU type, as the printed page colours it."""
    if choice is None or isinstance(choice, str):
        return "na"
    if choice.status in ("ran", "none"):
        return choice.status
    return "one" if choice.num_gpus == 1 else "many"


def _shown(choice: Any, max_gpus: int) -> dict[str, Any]:
    """A cell on one GPU type as the page shows it: its fit colour, its lines, the tooltip."""
    from trainplan.i18n import _, translate
    from trainplan.report.table_text import choice_parts

    if choice is None:                  # no such cell for this model (a column of another's)
        return {"kind": "na", "parts": ["-"], "tip": "", "calibrated": False}
    if isinstance(choice, str):         # the combination does not exist (QLoRA in fp32): why
        return {"kind": "na", "parts": [_("n/a")], "tip": translate(choice), "calibrated": False}
    return {"kind": _kind(choice), "parts": choice_parts(choice, max_gpus),
            "tip": translate(choice.calibrated) if choice.calibrated else "", "calibrated": bool(choice.calibrated)}


def table_view(result: Any) -> dict[str, Any]:
    """The JSON of a table: the records of `trainplan table --json` (`cells`) and the page's layout
    of them in the current language (title, columns, one sub-row per model and GPU type,
    assumptions, notes, prices with their sources)."""
    from trainplan.i18n import translate
    from trainplan.planner.table_rows import long_rows, price_rows
    from trainplan.report.table_text import assumption_lines, grid, header, title

    columns, rows = grid(result)
    max_gpus = result.request.max_gpus
    return plain({
        "title": title(result),
        "columns": [{"key": c, "header": header(c)} for c in columns],
        "rows": [{"model": model, "params": params, "gpu": gpu,
                  "cells": [_shown(row[c], max_gpus) for c in columns]} for model, params, gpu, row in rows],
        "assumptions": assumption_lines(result),
        "notes": [translate(n) for n in result.notes],
        "merged": [{"column": kept, "stands_for": list(others)} for kept, others in result.merged],
        "prices": price_rows(result.request),
        "ledger": result.request.ledger or None,
        "cells": long_rows(result.cells),
    })


def _written(write: Any, suffix: str) -> bytes:
    """The bytes a writer puts in a file (a private temporary folder, removed afterwards)."""
    with tempfile.TemporaryDirectory(prefix="trainplan-web-") as folder:
        path = os.path.join(folder, f"table.{suffix}")
        write(path)
        with open(path, "rb") as handle:
            return handle.read()


def _text_file(text: str) -> bytes:
    """What table_formats.write_text puts in the file: the text, ending in one newline."""
    return (text if text.endswith("\n") else text + "\n").encode("utf-8")


def download(result: Any, fmt: str, paper: str) -> bytes:
    """The file `trainplan table --format FMT --paper PAPER --output FILE` writes (cli/table.py)."""
    from trainplan.planner.table_rows import long_rows

    if fmt == "xlsx":
        from trainplan.report.table_xlsx import write_table_xlsx

        return _written(lambda path: write_table_xlsx(path, result, paper=paper), "xlsx")
    if fmt == "html":
        from trainplan.report.table_page import render_page

        return _text_file(render_page(result, paper=paper))
    if fmt == "markdown":
        from trainplan.report.table_text import to_markdown

        return _text_file(to_markdown(result))
    from trainplan.report import table_formats as tf

    rows = long_rows(result.cells)
    return _text_file(tf.render(fmt, rows, list(dict.fromkeys(k for r in rows for k in r))))


def tiers_download(tr: Any, fmt: str) -> tuple[str, list[dict[str, Any]], bytes | None]:
    """(title, rows, the file of `trainplan table --tiers --format FMT`, None for json)."""
    from trainplan.planner import table
    from trainplan.report import table_formats as tf

    rows = table.tier_rows(tr)
    columns = list(rows[0]) if rows else []
    heading = table.tier_title(tr)
    if fmt == "json":
        return heading, rows, None
    if fmt == "xlsx":
        return heading, rows, _written(lambda path: tf.write_xlsx(path, [("tiers", rows, columns)]), "xlsx")
    return heading, rows, _text_file(tf.render(fmt, rows, columns, title=heading))
