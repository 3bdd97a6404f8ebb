"""`trainplan export`: the configs and launch lines that run one setup (the setup flags of `estimate`,
or `--from` a config), for the framework's own tools or the formats asked for."""

from __future__ import annotations

import argparse

from trainplan.cli.common import print_json
from trainplan.cli.flags import add_setup_flags, options_from_args
from trainplan.estimation import estimate
from trainplan.export.write import FORMATS, build_export, context_for, write_export
from trainplan.job.resolve import resolve_job


def main_figures(est) -> dict:
    """The estimate's figures an export's --json carries beside the files."""
    mem, t = est.memory, est.time
    known = est.workload.samples is not None or est.workload.steps is not None
    return {"device_bytes": mem.device_bytes, "usable_bytes": mem.usable_bytes, "fits": mem.fits,
            "margin_bytes": mem.usable_bytes - mem.device_bytes, "headroom": mem.headroom, "step_s": t.step_s,
            "tokens_per_s_per_gpu": t.tokens_per_s_per_gpu, "steps": t.steps if known else None,
            "total_s": t.total_with_retries_s if known else None,
            "cost": est.cost.to_dict() if est.cost is not None else None}


def cmd_export(args: argparse.Namespace) -> int:
    given = getattr(args, "_given", set())
    if args.gpus_per_node is not None and "num_gpus" not in given:   # --nodes N --gpus-per-node G: N x G GPUs
        args.num_gpus = args.nodes * args.gpus_per_node
        args._given = given | {"num_gpus"}
    named = args.dataset      # --dataset: the name the configs write; its lengths when the catalog knows every name
    if named:
        from trainplan.catalog.datasets import dataset_names, mixture

        if mixture(dataset_names(named))[1]:
            args.dataset = None
    job = resolve_job(options_from_args(args))
    est = estimate(job)
    ctx = context_for(job, nodes=args.nodes if "nodes" in getattr(args, "_given", set()) else None,
                      gpus_per_node=args.gpus_per_node, master_addr=args.master_addr, master_port=args.master_port,
                      dataset=named, output_dir=args.output_dir, model_path=args.model_path)
    export = build_export(job, est, args.format, ctx)
    written = write_export(export, args.out, force=args.force) if args.out else ()
    if args.json:
        print_json({**export.to_dict(), "written": list(written), "estimate": main_figures(est)})
    elif args.out:
        print(f"wrote {len(written)} files to {args.out}:")
        for path in written:
            print(f"  {path}")
        for command in export.commands:
            print(f"\nlaunch:\n{command}")
    else:
        for f in export.files:
            print(f"# ---- {f.name}")
            print(f.text, end="" if f.text.endswith("\n") else "\n")
        loose = [c for c in export.commands if not any(c in f.text for f in export.files)]
        if loose:
            print("# ---- launch")
            for command in loose:
                print(command)
        if export.notes:
            print("# ---- notes")
            for note in export.notes:
                print(f"# {note}")
    return 0


def add(sub, name: str, helptext: str) -> None:
    p = sub.add_parser(name, help=helptext)
    add_setup_flags(p)
    e = p.add_argument_group("export")
    e.add_argument("--format", help=f"comma list of {', '.join(FORMATS)} (default: the framework's own, with "
                                    "DeepSpeed's JSON under ZeRO, accelerate's YAML under FSDP, and launch)")
    e.add_argument("--out", metavar="DIR", help="write the files here (default: print them)")
    e.add_argument("--force", action="store_true", help="replace files that exist in --out")
    e.add_argument("--gpus-per-node", type=int, help="GPUs per node (default: --num-gpus / --nodes)")
    e.add_argument("--master-addr", help="node 0's address in the launch lines (default: $MASTER_ADDR)")
    e.add_argument("--master-port", type=int, help="the rendezvous port (default 29500)")
    e.add_argument("--output-dir", help="the training output folder the configs name (default: output)")
    e.add_argument("--model-path", help="what the configs name as the model (default: its HF id)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_export)
