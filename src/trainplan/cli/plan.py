"""`trainplan plan`, `trainplan table` and `trainplan fit`. Only argument wiring and output here; the
work is in planner/ and report/ (plots and xlsx load matplotlib / openpyxl only when asked)."""

from __future__ import annotations

import argparse
import sys
import time

from trainplan.cli.common import csv_list, print_json
from trainplan.cli.flags import add_setup_flags, options_from_args
from trainplan.planner import table
from trainplan.planner.fit import fit, resolve_fit
from trainplan.planner.plan import plan
from trainplan.planner.request import resolve_plan
from trainplan.report import plan_text
from trainplan.report import table_formats as tf
from trainplan.report.plots import (
    check_path,
    memory_breakdown,
    memory_vs_seq,
    plan_front,
)


class ProgressBar:
    """A one-line bar on stderr, drawn only on a terminal and only once the work has run `delay_s`."""

    def __init__(self, stream=None, delay_s: float = 1.0, width: int = 30) -> None:
        self.stream = stream or sys.stderr
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.delay_s, self.width = delay_s, width
        self.start = time.perf_counter()
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled or total <= 0:
            return
        if not self.shown and (done >= total or time.perf_counter() - self.start < self.delay_s):
            return
        filled = int(self.width * done / total)
        self.stream.write(f"\rplanning [{'#' * filled}{'.' * (self.width - filled)}] {done / total:4.0%}")
        self.stream.flush()
        self.shown = True

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * (self.width + 20) + "\r")
            self.stream.flush()


def cmd_plan(args: argparse.Namespace) -> int:
    if args.plot:
        check_path(args.plot)
    pr = resolve_plan(options_from_args(args), methods=csv_list(args.methods), gpus=csv_list(args.gpus) or None,
                      max_gpus=args.max_gpus, gpus_per_node=args.gpus_per_node, global_batch=args.global_batch,
                      budget=args.budget, deadline_hours=args.deadline, sort=args.sort, top=args.top,
                      optimizers=csv_list(args.optimizers))
    bar = ProgressBar()
    try:
        result = plan(pr, progress=bar, details=args.json)
    finally:
        bar.close()
    if args.plot:
        ranks = {id(p.found): p.rank for p in result.plans}
        points = [{"cost": f.cost_value, "time_s": f.time_s, "pareto": on, "rank": ranks.get(id(f)),
                   "label": f"{f.rentable.gpu.id} x{f.shape.num_gpus}"} for f, on in zip(result.found, result.pareto)]
        plan_front(points, args.plot, currency=result.currency,
                   title=f"{pr.job.setup.model.name}: plans that fit, cost against time")
    if args.json:
        print_json(result.to_dict())
    else:
        print(plan_text.render_plan(result))
        if args.plot:
            print(f"wrote {args.plot}")
    return 0


def cmd_fit(args: argparse.Namespace) -> int:
    result = fit(resolve_fit(options_from_args(args)))
    if args.json:
        print_json(result.to_dict())
    else:
        print(plan_text.render_fit(result))
    return 0


def _table_request(args: argparse.Namespace) -> table.TableRequest:
    return table.resolve_table(options_from_args(args, model_required=False), models=csv_list(args.models), sizes=csv_list(args.sizes),
                               methods=csv_list(args.methods) or table.DEFAULT_METHODS,
                               precisions=csv_list(args.precisions), gpus=csv_list(args.gpus) or table.DEFAULT_GPUS,
                               max_gpus=args.max_gpus, gpus_per_node=args.gpus_per_node)


def cmd_table(args: argparse.Namespace) -> int:
    fmt = "json" if args.json else args.format
    tf.check_format(fmt, args.output)
    for path in (args.plot, args.plot_seq):
        if path:
            check_path(path)
    tr = _table_request(args)
    if args.tiers:
        rows = table.tier_rows(tr)
        columns = list(rows[0]) if rows else []
        title = table.tier_title(tr)
        sheets = [("tiers", rows, columns)]
        long_rows, long_columns = rows, columns
    else:
        result = table.resource_table(tr)
        rows, columns = table.pivot_rows(result)
        long_rows = table.long_rows(result.cells)
        long_columns = list(dict.fromkeys(k for r in long_rows for k in r))
        title = "Memory per GPU (one GPU, device view); fewest GPUs of each type (ZeRO-3 beyond one)"
        if tr.dataset:
            title += f"; cost at {tr.book.kind_label} prices in {tr.book.currency}"
        sheets = [("table", rows, columns), ("data", long_rows, long_columns)]
        _pictures(args, result)
    if fmt == "xlsx":
        tf.write_xlsx(args.output, sheets)
        print(f"wrote {args.output}")
        return 0
    if fmt in ("csv", "json"):
        text = tf.render(fmt, long_rows, long_columns)
    else:
        text = tf.render(fmt, rows, columns, title=title)
    if args.output:
        tf.write_text(text, args.output)
        print(f"wrote {args.output}")
    else:
        print(text)
    return 0


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
    if name == "plan":
        g = p.add_argument_group("what the planner may choose")
        g.add_argument("--methods", help="comma list of methods to consider (default: --method)")
        g.add_argument("--optimizers", help="comma list of the optimizers allowed, e.g. adamw,adamw-8bit "
                                            "(default: --optimizer, else the framework's default only)")
        g.add_argument("--gpus", default="all", help="comma list of GPU ids/aliases, or all (default)")
        g.add_argument("--max-gpus", type=int, default=64, help="most GPUs in one plan (default 64)")
        g.add_argument("--gpus-per-node", type=int, default=8, help="GPUs per node (default 8)")
        g.add_argument("--global-batch", type=int, default=32,
                       help="sequences per optimizer step, held by every plan (default 32)")
        g.add_argument("--budget", type=float, help="most money for the run (in the plan's currency)")
        g.add_argument("--deadline", type=float, help="most wall-clock hours for the run (retries included)")
        g.add_argument("--sort", default="cost", help="cost (default) or time")
        g.add_argument("--top", type=int, default=10, help="plans shown (default 10)")
        g.add_argument("--plot", help="draw cost against time with the Pareto front (PNG or SVG)")
        p.set_defaults(func=cmd_plan)
    elif name == "table":
        _optional_model(p)
        g = p.add_argument_group("the table")
        g.add_argument("--models", help="comma list of models (rows)")
        g.add_argument("--sizes", help="comma list of sizes, e.g. 7b,13b,70b: catalog models of those sizes")
        g.add_argument("--methods", help="comma list (default full,lora,qlora)")
        g.add_argument("--precisions", help="comma list (default: --precision or the framework's)")
        g.add_argument("--gpus", help="comma list of GPU types (default a100-80gb,h100,rtx4090), or all")
        g.add_argument("--max-gpus", type=int, default=64, help="most GPUs tried per type (default 64)")
        g.add_argument("--gpus-per-node", type=int, default=8)
        g.add_argument("--tiers", action="store_true",
                       help="one job (the first model/method/precision) across GPU types")
        g.add_argument("--format", default="terminal", help="terminal | markdown | csv | xlsx | html | json")
        g.add_argument("--output", help="write to FILE (required for xlsx)")
        g.add_argument("--plot", help="stacked bars of the memory components (PNG or SVG)")
        g.add_argument("--plot-seq", help="memory against sequence length, GPU capacities as lines (PNG or SVG)")
        p.add_argument("--json", action="store_true", help="same as --format json")
        p.set_defaults(func=cmd_table)
        return
    else:
        p.set_defaults(func=cmd_fit)
    p.add_argument("--json", action="store_true")
