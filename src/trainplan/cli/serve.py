"""`trainplan serve`: the web page and the JSON API (trainplan.web), on 127.0.0.1 unless --host.
FastAPI and uvicorn are the `web` extra, imported only when this command runs."""

from __future__ import annotations

import argparse

from trainplan.errors import TrainplanError


def cmd_serve(args: argparse.Namespace) -> int:
    if not 0 < args.port < 65536:
        raise TrainplanError(f"--port must be 1-65535, got {args.port}")
    try:
        import uvicorn

        from trainplan.web.app import create_app
    except ImportError as exc:
        raise TrainplanError(f"serve needs the 'web' extra (pip install 'trainplan[web]'): {exc}") from None
    app = create_app(db=args.db)
    where = "" if args.host in ("127.0.0.1", "localhost", "::1") else " (reachable from other machines)"
    verb = "would serve" if args.dry_run else "serving"
    print(f"trainplan: {verb} http://{args.host}:{args.port}/{where}; "
          f"ledger: {'yes' if app.state.ledger_url else 'none (read-only, no runs)'}")
    if args.dry_run:            # the app is built and the settings checked; nothing listens
        return 0
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def add(sub, name: str, helptext: str) -> None:
    p = sub.add_parser(name, help=helptext)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    p.add_argument("--db", help="the ledger's SQLAlchemy URL (default $TRAINPLAN_DB; none: no runs, no writes)")
    p.add_argument("--dry-run", action="store_true", help="build the app and check the settings, then exit")
    p.set_defaults(func=cmd_serve)
