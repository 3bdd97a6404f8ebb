"""`trainplan table`: the resource table. Only argument wiring and output here; the cells are
planner/table.py, the writers report/table_text.py (terminal, Markdown), report/table_page.py (HTML),
report/table_xlsx.py and report/table_formats.py (CSV, JSON). With --json the standard output is
JSON whatever --output and --format write."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from trainplan.cli.common import csv_list, print_json
from trainplan.cli.flags import add_setup_flags, options_from_args
from trainplan.errors import TrainplanError
from trainplan.planner import table
from trainplan.report import table_formats as tf
from trainplan.report.plots import check_path, memory_breakdown, memory_vs_seq

PAPERS = ("a4", "letter")


def _table_request(args: argparse.Namespace) -> table.TableRequest:
    return table.resolve_table(options_from_args(args, model_required=False, counts_chosen=True),
                               models=csv_list(args.models), sizes=csv_list(args.sizes),
                               methods=csv_list(args.methods) or table.DEFAULT_METHODS,
                               precisions=csv_list(args.precisions), quants=csv_list(args.quants),
                               gpus=csv_list(args.gpus) or table.DEFAULT_GPUS, max_gpus=args.max_gpus,
                               gpus_per_node=args.gpus_per_node, global_batch=args.global_batch, db=args.db)


def _file_format(args: argparse.Namespace) -> str:
    """The format of what is written: --format, else json when --json writes a file."""
    if args.format is not None:
        return args.format
    return "json" if args.json and args.output else "terminal"


def cmd_table(args: argparse.Namespace) -> int:
    fmt = _file_format(args)
    tf.check_format(fmt, args.output)
    if args.paper not in PAPERS:
        raise TrainplanError(f"--paper must be one of {', '.join(PAPERS)}, got {args.paper!r}")
    for path in (args.plot, args.plot_seq):
        if path:
            check_path(path)
    tr = _table_request(args)
    if args.tiers:
        return _tiers(args, tr, fmt)
    result = table.resource_table(tr)
    long_rows = table.long_rows(result.cells)
    _pictures(args, result)
    def xlsx() -> None:
        from trainplan.report.table_xlsx import write_table_xlsx

        write_table_xlsx(args.output, result, paper=args.paper)

    return _deliver(args, fmt, xlsx, lambda: _render(fmt, result, long_rows, args.paper), long_rows)


def _deliver(args: argparse.Namespace, fmt: str, xlsx: Callable[[], None], text: Callable[[], str],
             rows: list[dict]) -> int:
    """The table out: an xlsx file, or the text written to --output or printed; with --json the rows
    on stdout (and the file still written), else "wrote FILE"."""
    if fmt == "xlsx":
        xlsx()
    elif args.output or not args.json:
        rendered = text()
        if args.output:
            tf.write_text(rendered, args.output)
        else:
            print(rendered)
    if args.json:
        print_json(rows)
    elif args.output:
        print(f"wrote {args.output}")
    return 0


def _render(fmt: str, result: table.TableResult, long_rows: list[dict], paper: str) -> str:
    if fmt == "html":
        from trainplan.report.table_page import render_page

        return render_page(result, paper=paper)
    if fmt in ("csv", "json"):
        columns = list(dict.fromkeys(k for r in long_rows for k in r))
        return tf.render(fmt, long_rows, columns)
    from trainplan.report import table_text

    return table_text.to_markdown(result) if fmt == "markdown" else table_text.render_text(result)


def _tiers(args: argparse.Namespace, tr: table.TableRequest, fmt: str) -> int:
    rows = table.tier_rows(tr)
    columns = list(rows[0]) if rows else []
    return _deliver(args, fmt, lambda: tf.write_xlsx(args.output, [("tiers", rows, columns)]),
                    lambda: tf.render(fmt, rows, columns, title=table.tier_title(tr)), rows)


def _pictures(args: argparse.Namespace, result: table.TableResult) -> None:
    if args.plot:
        memory_breakdown(table.breakdown_bars(result), args.plot, capacities=table.capacities(result.request))
    if args.plot_seq:
        memory_vs_seq(table.seq_series(result), args.plot_seq, capacities=table.capacities(result.request))


def _optional_model(p: argparse.ArgumentParser) -> None:
    for action in p._actions:       # add_setup_flags makes --model required; table rows name their own
        if action.dest == "model":
            action.required = False
            action.default = None
            action.help = "one model (or use --models / --sizes)"


def add(sub, name: str, helptext: str) -> None:
    p = sub.add_parser(name, help=helptext)
    add_setup_flags(p)
    _optional_model(p)
    g = p.add_argument_group("the table")
    g.add_argument("--models", help="comma list of models (rows)")
    g.add_argument("--sizes", help="comma list of sizes, e.g. 7b,13b,70b: catalog models of those sizes")
    g.add_argument("--methods", help="comma list (default full,lora,qlora)")
    g.add_argument("--precisions", help="comma list (default: --precision or the framework's); identical "
                                        "columns (bf16 and fp16) are merged")
    g.add_argument("--quants", help="comma list of QLoRA's quantized bases as columns, e.g. nf4,int8 "
                                    "(default: --quant, else nf4)")
    g.add_argument("--gpus", help="comma list of GPU types (default a100-80gb,h100,rtx4090), or all")
    g.add_argument("--global-batch", type=int, default=table.DEFAULT_GLOBAL_BATCH,
                   help="sequences per optimizer step in every cell: micro-batch x accumulation x data "
                        f"parallel (default {table.DEFAULT_GLOBAL_BATCH})")
    g.add_argument("--max-gpus", type=int, default=64, help="most GPUs tried per type (default 64)")
    g.add_argument("--gpus-per-node", type=int, default=8)
    g.add_argument("--db", help="the ledger whose recorded runs correct the cells (default $TRAINPLAN_DB, else "
                                "the default file when it exists; never created)")
    g.add_argument("--tiers", action="store_true",
                   help="one job (the first model/method/precision) across GPU types")
    g.add_argument("--format", default=None, help="terminal | markdown | csv | xlsx | html | json")
    g.add_argument("--paper", default="a4", help="printed page of html and xlsx: a4 (default) or letter, landscape")
    g.add_argument("--output", help="write to FILE (required for xlsx)")
    g.add_argument("--plot", help="stacked bars of the memory components (PNG or SVG)")
    g.add_argument("--plot-seq", help="memory against sequence length, GPU capacities as lines (PNG or SVG)")
    p.add_argument("--json", action="store_true", help="JSON on the standard output (with --output, the file "
                                                       "is written in --format as well)")
    p.set_defaults(func=cmd_table)
