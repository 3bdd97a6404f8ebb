"""The `trainplan` command: a thin layer over the library (no formulas here).

Every command takes --json; bad input prints one line and exits with code 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from typing import Any, Sequence

from trainplan.errors import TrainplanError

EXIT_USAGE = 2

# Modules that add subcommands: register(subparsers, add_setup_flags). Planner and table, the
# ledger (record/runs/calibrate/import/accuracy), the probe.
_EXTENSIONS = ("cli.plan", "cli.ledger", "cli.probe")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse prints usage too)
        raise TrainplanError(f"{self.prog}: {message}")


def add_setup_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("what to train")
    g.add_argument("--model", required=True, help="catalog name, HF id, or path to config.json / its folder")
    g.add_argument("--method", default="full", help="full | lora | qlora | freeze")
    g.add_argument("--precision", help="bf16 | fp16 | fp32 | bf16-pure | fp16-pure | fp8 (default: framework's)")
    g.add_argument("--optimizer", help="adamw | adamw-fused | adamw-8bit | paged-adamw-8bit | adafactor | sgd | lion")
    g.add_argument("--lora-rank", type=int, default=16)
    g.add_argument("--lora-alpha", type=float)
    g.add_argument("--lora-dropout", type=float, default=0.05)
    g.add_argument("--lora-targets", help="comma-separated module names, or all-linear (default: peft's)")
    g.add_argument("--dora", action="store_true")
    g.add_argument("--quant", help="nf4 | fp4 | int8 (qlora)")
    g.add_argument("--double-quant", action="store_true")
    g.add_argument("--freeze-layers", type=int, default=2, help="method freeze: train the last N layers")
    g.add_argument("--batch-size", type=int, default=1, help="micro-batch per GPU")
    g.add_argument("--grad-accum", type=int, default=1)
    g.add_argument("--seq-len", type=int, default=2048)
    g.add_argument("--grad-ckpt", help="none | full | selective (default: framework's)")
    g.add_argument("--attention", help="flash | sdpa | eager")
    g.add_argument("--framework", default="hf",
                   help="hf | deepspeed | fsdp | megatron | litgpt | torchtune | llamafactory | swift | unsloth | axolotl")
    g.add_argument("--optimizer-in-backward", action=argparse.BooleanOptionalAction, default=None)
    g.add_argument("--loss", help="full | chunked | fused")
    g.add_argument("--activation-offload", action=argparse.BooleanOptionalAction, default=None)
    g.add_argument("--liger", action=argparse.BooleanOptionalAction, default=None,
                   help="fused RMSNorm/SwiGLU kernels (Liger/Unsloth)")
    g.add_argument("--load-fp32", action=argparse.BooleanOptionalAction, default=None,
                   help="frozen weights loaded in fp32 under mixed precision")
    h = p.add_argument_group("where it runs")
    h.add_argument("--gpu", default="a100-80gb")
    h.add_argument("--num-gpus", type=int, default=1)
    h.add_argument("--nodes", type=int, default=1)
    h.add_argument("--zero", default="0", help="DeepSpeed ZeRO stage 0-3")
    h.add_argument("--fsdp", default="none", help="none | full | hybrid")
    h.add_argument("--offload", default="none", help="none | optimizer | params | all")
    for key in ("tp", "pp", "cp", "ep"):
        h.add_argument(f"--{key}", type=int, default=1)
    h.add_argument("--sequence-parallel", action=argparse.BooleanOptionalAction, default=True,
                   help="Megatron sequence parallelism with --tp > 1 (default on)")
    h.add_argument("--vpp", type=int, default=1, help="virtual pipeline stages (interleaved 1F1B)")
    h.add_argument("--uneven-pipeline", action="store_true", help="allow layers not divisible by --pp")
    h.add_argument("--headroom", type=float, default=0.10, help="safety margin as a fraction (default 0.10)")
    w = p.add_argument_group("data, time and money")
    w.add_argument("--samples", type=int)
    w.add_argument("--tokens-per-sample", type=int)
    w.add_argument("--epochs", type=float, default=1.0)
    w.add_argument("--packing", action="store_true")
    w.add_argument("--retry-factor", type=float, default=1.0)
    w.add_argument("--provider")
    w.add_argument("--price-per-gpu-hour", type=float)
    w.add_argument("--currency")
    w.add_argument("--spot", action="store_true")
    w.add_argument("--interconnect", help="inter-node network: ib-ndr, ib-hdr, roce-200, efa-3200, ethernet-100, ...")
    w.add_argument("--compile", action=argparse.BooleanOptionalAction, default=None,
                   help="torch.compile: fused kernels (time), fused norm/SwiGLU saves and a compiled loss (memory)")
    w.add_argument("--efficiency", type=float, help="override the matmul efficiency (fraction of peak)")
    w.add_argument("--eval-fraction", type=float, default=0.0, help="evaluation tokens / training tokens")
    w.add_argument("--checkpoint-saves", type=int, default=0)
    w.add_argument("--disk-gb-per-s", type=float, default=1.0, help="checkpoint write bandwidth (GB/s)")
    w.add_argument("--lengths-file", help="sample lengths in tokens: one per line, or a JSON list")
    w.add_argument("--calibration", action=argparse.BooleanOptionalAction, default=True,
                   help="apply the calibration `trainplan calibrate` fitted (--no-calibration: the raw model)")


_SETUP_KEYS = ("model", "method", "precision", "optimizer", "lora_rank", "lora_alpha", "lora_dropout",
               "lora_targets", "dora", "quant", "double_quant", "freeze_layers", "batch_size", "grad_accum",
               "seq_len", "grad_ckpt", "attention", "framework", "optimizer_in_backward", "loss",
               "activation_offload", "liger", "load_fp32", "gpu", "num_gpus", "nodes", "zero", "fsdp",
               "offload", "tp", "pp", "cp", "ep", "headroom", "samples", "tokens_per_sample", "epochs",
               "packing", "retry_factor", "provider", "price_per_gpu_hour", "currency", "spot", "interconnect",
               "sequence_parallel", "vpp", "uneven_pipeline", "compile", "efficiency", "eval_fraction",
               "checkpoint_saves", "disk_gb_per_s", "lengths_file", "calibration")


def request_from_args(args: argparse.Namespace):
    from trainplan.job.options import Request

    return Request(**{k: getattr(args, k) for k in _SETUP_KEYS if hasattr(args, k)})


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def cmd_estimate(args: argparse.Namespace) -> int:
    from trainplan.estimation.result import run

    est = run(request_from_args(args))
    if args.json:
        _print_json(est.to_dict())
    else:
        from trainplan.report.estimate_text import render

        print(render(est))
    return 0


def _listing(rows: list[dict], args: argparse.Namespace, columns: Sequence[str] | None = None) -> int:
    if args.json:
        _print_json(rows)
    else:
        from trainplan.report.tables import render_table

        print(render_table(rows, columns))
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    from trainplan.catalog import model_rows

    return _listing(model_rows(args.filter), args)


def cmd_gpus(args: argparse.Namespace) -> int:
    from trainplan.catalog import gpu_rows

    return _listing(gpu_rows(args.filter), args)


def cmd_prices(args: argparse.Namespace) -> int:
    from trainplan.catalog import price_rows

    spot = True if args.spot else None
    return _listing(price_rows(gpu=args.gpu, provider=args.provider, currency=args.currency, spot=spot), args)


def cmd_trace(args: argparse.Namespace) -> int:
    try:
        from trainplan.trace import run_trace
    except ImportError as exc:
        raise TrainplanError(f"trace needs the 'trace' extra (pip install 'trainplan[trace]'): {exc}") from None
    from trainplan.job.options import build_setup

    setup = build_setup(request_from_args(args))
    result = run_trace(setup, plot_path=args.plot)
    if args.json:
        _print_json(result.to_dict())
    else:
        from trainplan.report.trace_text import render

        print(render(setup, result))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="trainplan", description="Will this LLM training run fit, how long, how much?")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("estimate", help="memory per GPU, time and cost of one setup")
    add_setup_flags(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_estimate)
    p = sub.add_parser("trace", help="exact memory of one step traced with fake tensors (CPU, needs torch)")
    add_setup_flags(p)
    p.add_argument("--plot", help="write the memory timeline to PNG or SVG")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_trace)
    for name, func, helptext in (("models", cmd_models, "the model catalog"),
                                 ("gpus", cmd_gpus, "the GPU catalog")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("filter", nargs="?", help="substring to match")
        p.add_argument("--json", action="store_true")
        p.set_defaults(func=func)
    for module in _EXTENSIONS:   # each registers its own subcommands; heavy imports stay lazy
        try:
            mod = importlib.import_module(f"trainplan.{module}")
        except ModuleNotFoundError as exc:
            if exc.name != f"trainplan.{module}":
                raise
            continue
        mod.register(sub, add_setup_flags)
    p = sub.add_parser("prices", help="the price catalog (dated, with sources)")
    p.add_argument("--gpu")
    p.add_argument("--provider")
    p.add_argument("--currency")
    p.add_argument("--spot", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_prices)
    return parser


def _version() -> str:
    from trainplan import __version__

    return f"trainplan {__version__}"


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.func(args)
    except TrainplanError as exc:
        print(f"trainplan: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("trainplan: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:   # output piped into `head` and the like
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except Exception as exc:  # never a traceback for users; TRAINPLAN_DEBUG=1 shows it
        if os.environ.get("TRAINPLAN_DEBUG"):
            raise
        print(f"trainplan: internal error: {type(exc).__name__}: {exc} (set TRAINPLAN_DEBUG=1 for details)",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
