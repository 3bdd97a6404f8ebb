"""`trainplan plan`, `trainplan table` and `trainplan fit`. Only argument wiring and output here; the
work is in planner/ and report/ (plots and xlsx load matplotlib / openpyxl only when asked)."""

from __future__ import annotations

import argparse
import os
import sys
import time

from trainplan.cli.common import csv_list, print_json
from trainplan.cli.flags import add_setup_flags, options_from_args
from trainplan.errors import TrainplanError
from trainplan.planner.fit import fit, resolve_fit
from trainplan.planner.plan import plan
from trainplan.planner.request import resolve_plan
from trainplan.report import plan_text
from trainplan.report.plots import (
    check_path,
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
    if args.export and os.path.exists(args.export) and not os.path.isdir(args.export):
        raise TrainplanError(f"--export {args.export!r}: not a directory")   # before the search, not after
    pr = resolve_plan(options_from_args(args, counts_chosen=True), methods=csv_list(args.methods), gpus=csv_list(args.gpus) or None,
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
    exported = _export_plan(args, pr, result) if args.export else None
    if args.json:
        out = result.to_dict()
        if exported is not None:
            out["export"] = exported
        print_json(out)
    else:
        print(plan_text.render_plan(result))
        if args.plot:
            print(f"wrote {args.plot}")
        if exported is not None:
            print(f"\nexported plan {exported['rank']} ({exported['formats']}) to {exported['directory']}:")
            for path in exported["written"]:
                print(f"  {path}")
            for command in exported["commands"]:
                print(f"launch:\n{command}")
    return 0


def _export_plan(args: argparse.Namespace, pr, result) -> dict:
    """`plan --export DIR [--export-rank N] [--format ...]`: the files and launch lines of the plan
    ranked N (default the first), written as `trainplan export` writes them (trainplan.export)."""
    from trainplan.estimation import estimate
    from trainplan.export.write import build_export, context_for, write_export
    from trainplan.planner.result import plan_job

    chosen = next((p for p in result.plans if p.rank == args.export_rank), None)
    if chosen is None:
        ranks = ", ".join(str(p.rank) for p in result.plans) or "none"
        raise TrainplanError(f"--export-rank {args.export_rank}: no such plan is shown (shown: {ranks})")
    job = chosen.job if chosen.job is not None else plan_job(pr, chosen.found)
    est = chosen.estimate or estimate(job)
    export = build_export(job, est, args.export_format, context_for(job))   # the plan's own nodes x GPUs
    written = write_export(export, args.export, force=args.force)
    return {"rank": chosen.rank, "directory": args.export, "formats": ",".join(sorted({f.format for f in export.files})),
            "written": list(written), "commands": list(export.commands), "notes": list(export.notes)}


def cmd_fit(args: argparse.Namespace) -> int:
    result = fit(resolve_fit(options_from_args(args)))
    if args.json:
        print_json(result.to_dict())
    else:
        print(plan_text.render_fit(result))
    return 0


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
        x = p.add_argument_group("export a plan (as trainplan export)")
        x.add_argument("--export", metavar="DIR", help="write the configs and launch lines of a shown plan into DIR")
        x.add_argument("--export-rank", type=int, default=1, help="the plan to export, by rank (default 1)")
        x.add_argument("--export-format", dest="export_format",
                       help="comma list of formats (default: the framework's own, as trainplan export)")
        x.add_argument("--force", action="store_true", help="with --export: replace files already in DIR")
        p.set_defaults(func=cmd_plan)
    else:
        p.set_defaults(func=cmd_fit)
    p.add_argument("--json", action="store_true")
