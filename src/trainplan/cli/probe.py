"""`trainplan probe`: a short real trial on the local GPU(s), measured beside the estimate.

torch is imported only when the command runs.
"""

from __future__ import annotations

import argparse
import json

from trainplan.cli.flags import add_setup_flags, options_from_args
from trainplan.errors import TrainplanError


def add(sub, name: str, helptext: str) -> None:
    p = sub.add_parser(name, help=helptext)
    add_setup_flags(p)
    g = p.add_argument_group("probe")
    g.add_argument("--device", default="cuda", help="cuda | cpu (cpu: small models, for tests)")
    g.add_argument("--steps", type=int, default=3, help="training steps to run; the first is a warm-up (default 3)")
    g.add_argument("--launcher", default="auto",
                   help="with --num-gpus > 1: auto | torchrun | deepspeed (auto: deepspeed when --zero > 0)")
    g.add_argument("--print-launch", action="store_true",
                   help="with --num-gpus > 1: print the launch command and generated config, run nothing")
    g.add_argument("--no-record", action="store_true", help="do not store the run in the ledger")
    g.add_argument("--db", help="ledger database URL (default: $TRAINPLAN_DB, else the local SQLite file)")
    p.add_argument("--json", action="store_true")
    # the estimate is made for the local GPU unless --gpu names one
    p.set_defaults(func=cmd_probe, gpu=None)


def cmd_probe(args: argparse.Namespace) -> int:
    req = options_from_args(args)
    if args.print_launch:
        from trainplan.probe.launch import describe_launch

        plan = describe_launch(req, device=args.device, steps=args.steps, launcher=args.launcher)
        print(json.dumps(plan, indent=2) if args.json else _launch_text(plan))
        return 0
    if args.launcher != "auto" and req.num_gpus <= 1:
        raise TrainplanError("--launcher applies with --num-gpus > 1")
    from trainplan.probe import probe

    result = probe(req, device=args.device, steps=args.steps, launcher=args.launcher)
    if not args.no_record:
        from trainplan.probe.record import record

        result = record(result, db=args.db)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        from trainplan.probe.text import render

        print(render(result))
    return 0


def _launch_text(plan: dict) -> str:
    import shlex

    lines = [f"launcher: {plan['launcher']} ({plan['strategy']})", "command:",
             "  " + shlex.join(plan["command"]), f"job file: {plan['job_file']}",
             f"each rank writes its measurement to {plan['rank_results']}/rank<N>.json"]
    if not plan.get("files_written", True):
        lines.append("nothing was written: the job file's content is `job` in --json (write it, and the DeepSpeed "
                     "config, to the paths above to run the command)")
    if plan.get("deepspeed_config") is not None:
        lines += [f"DeepSpeed config ({plan['deepspeed_config_file']}):",
                  json.dumps(plan["deepspeed_config"], indent=2)]
    return "\n".join(lines)
