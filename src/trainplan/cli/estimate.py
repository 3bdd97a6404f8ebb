"""`trainplan estimate`, `trace`, and the catalogs (`models`, `gpus`, `datasets`, `prices`)."""

from __future__ import annotations

import argparse

from trainplan.catalog import gpu_rows, model_rows
from trainplan.cli.common import print_json
from trainplan.cli.flags import add_setup_flags, options_from_args
from trainplan.errors import TrainplanError
from trainplan.estimation import estimate
from trainplan.job.resolve import build_setup, resolve_job
from trainplan.units import date


def cmd_estimate(args: argparse.Namespace) -> int:
    est = estimate(resolve_job(options_from_args(args), validated=True))   # options_from_args validated them
    if args.json:
        print_json(est.to_dict())
    else:
        from trainplan.report import (
            estimate_text,  # text for people; --json does without it
        )

        print(estimate_text.render(est, explain=getattr(args, "explain_from", False)))
    return 0


def cmd_trace(args: argparse.Namespace) -> int:
    if args.plot is not None:   # a bad --plot path (missing folder, symlink, FIFO) fails before torch loads
        from trainplan.trace.plot import check_plot_path

        check_plot_path(args.plot)
    try:   # torch and transformers: the 'trace' extra, loaded only here
        from trainplan.trace import run_trace
    except ImportError as exc:
        raise TrainplanError(f"trace needs the 'trace' extra (pip install 'trainplan[trace]'): {exc}") from None

    setup = build_setup(options_from_args(args))
    result = run_trace(setup, plot_path=args.plot)
    if args.json:
        print_json(result.to_dict())
    else:
        from trainplan.report.trace_text import render

        print(render(setup, result))
    return 0


def _listing(rows: list[dict], args: argparse.Namespace) -> int:
    if args.json:
        print_json(rows)
    else:
        from trainplan.report.tables import render_table

        print(render_table(rows))
    return 0


def cmd_models(args: argparse.Namespace) -> int:
    return _listing(model_rows(args.filter), args)


def cmd_gpus(args: argparse.Namespace) -> int:
    return _listing(gpu_rows(args.filter), args)


def cmd_datasets(args: argparse.Namespace) -> int:
    from trainplan.catalog.datasets import dataset_rows

    rows = dataset_rows(args.filter)
    if args.json:
        return _listing(rows, args)
    # the table for people: one line a dataset, the sources once below it
    _listing([{k: (", ".join(v) if isinstance(v, list) else v) for k, v in r.items() if k != "source"}
              for r in rows], args)
    for source in sorted({r["source"] for r in rows}):
        print(f"tokens per sample: {source}")
    return 0


def _book(args: argparse.Namespace):
    from trainplan.cost.sources import price_book

    return price_book(currency=args.currency, price_kind=args.price_kind, spot=args.spot, provider=args.provider,
                      prices=args.prices)


def cmd_prices(args: argparse.Namespace) -> int:
    from trainplan.cost.listing import price_rows

    book = _book(args)
    return _listing(price_rows(book, gpu=args.gpu, convert=book.currency_origin != "default",
                               today=date.today()), args)


def cmd_rates(args: argparse.Namespace) -> int:
    from trainplan.cost.listing import rate_rows

    rows = rate_rows(_book(args), today=date.today())
    if not args.json:
        rows = [{**{k: v for k, v in r.items() if k != "source"}, "per_usd": f"{r['per_usd']:g}"} for r in rows]
    return _listing(rows, args)


def add(sub, name: str, helptext: str) -> None:
    p = sub.add_parser(name, help=helptext)
    if name in ("estimate", "trace"):
        add_setup_flags(p)
        if name == "trace":
            p.add_argument("--plot", help="write the memory timeline to PNG or SVG")
        p.set_defaults(func=cmd_estimate if name == "estimate" else cmd_trace)
    elif name in ("models", "gpus", "datasets"):
        p.add_argument("filter", nargs="?", help="substring to match")
        p.set_defaults(func={"models": cmd_models, "gpus": cmd_gpus, "datasets": cmd_datasets}[name])
    else:
        if name == "prices":
            p.add_argument("--gpu")
            p.add_argument("--provider")
            p.add_argument("--currency", help="also show every price in this currency (dated rate table)")
            p.add_argument("--price-kind", help="only this kind: on-demand | spot | marketplace | reserved")
            p.add_argument("--spot", action="store_true", help="same as --price-kind spot")
        else:
            p.set_defaults(currency=None, price_kind=None, spot=False, provider=None)
        p.add_argument("--prices", metavar="FILE", help="a user or team price file (also $TRAINPLAN_PRICES, ...)")
        p.set_defaults(func=cmd_prices if name == "prices" else cmd_rates)
    p.add_argument("--json", action="store_true")
