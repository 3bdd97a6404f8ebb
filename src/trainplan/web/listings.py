"""The listing endpoints: /api/models, /api/gpus, /api/prices (the catalogs and price files, as
`trainplan models | gpus | prices --json`), /api/runs (the ledger, as `trainplan runs --json`;
POST records a run, only when the server was started with a ledger: `serve --db` or
$TRAINPLAN_DB), and /api/info (what this server offers)."""

from __future__ import annotations

import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import Field

from trainplan import __version__
from trainplan.errors import TrainplanError
from trainplan.web.params import MAX_TEXT, RunBody, _Record, check_model_name, setup_keywords
from trainplan.web.routes import ERRORS, export_formats

router = APIRouter(prefix="/api", responses=ERRORS)


class Filter(_Record):
    filter: str | None = Field(default=None, max_length=MAX_TEXT, description="substring to match")


class PriceQuery(_Record):
    gpu: str | None = Field(default=None, max_length=MAX_TEXT)
    provider: str | None = Field(default=None, max_length=MAX_TEXT)
    currency: str | None = Field(default=None, max_length=MAX_TEXT, description="also show every price in it")
    price_kind: str | None = Field(default=None, max_length=MAX_TEXT)
    spot: bool = False


class RunsQuery(_Record):
    model: str | None = Field(default=None, max_length=MAX_TEXT)
    method: str | None = Field(default=None, max_length=MAX_TEXT)
    framework: str | None = Field(default=None, max_length=MAX_TEXT)
    gpu: str | None = Field(default=None, max_length=MAX_TEXT)
    source: str | None = Field(default=None, max_length=MAX_TEXT)
    precision: str | None = Field(default=None, max_length=MAX_TEXT)
    limit: int = Field(default=200, ge=0, le=100_000, description="newest N runs (0: all)")


@router.get("/info", summary="this server: version, ledger, export formats")
def info(request: Request) -> dict[str, Any]:
    ledger = request.app.state.ledger_url
    return {"version": __version__, "ledger": ledger is not None, "writable": ledger is not None,
            "export_formats": export_formats(), "upload_limit_bytes": request.app.state.upload_limit}


@router.get("/models", summary="the model catalog")
def models(q: Annotated[Filter, Query()]) -> list[dict[str, Any]]:
    from trainplan.catalog import model_rows

    return model_rows(q.filter)


@router.get("/gpus", summary="the GPU catalog")
def gpus(q: Annotated[Filter, Query()]) -> list[dict[str, Any]]:
    from trainplan.catalog import gpu_rows

    return gpu_rows(q.filter)


@router.get("/prices", summary="the prices known (dated, with sources)")
def prices(q: Annotated[PriceQuery, Query()]) -> list[dict[str, Any]]:
    from trainplan.cost.listing import price_rows
    from trainplan.cost.sources import price_book

    book = price_book(currency=q.currency, price_kind=q.price_kind, spot=q.spot, provider=q.provider)
    return price_rows(book, gpu=q.gpu, convert=book.currency_origin != "default", today=datetime.date.today())


def _engine(request: Request):
    url = request.app.state.ledger_url
    if url is None:
        return None, None
    from trainplan.ledger.capture import open_ledger

    return url, open_ledger(url)


@router.get("/runs", summary="the ledger's runs with estimate, measurement and residual")
def runs(request: Request, q: Annotated[RunsQuery, Query()]) -> dict[str, Any]:
    url, engine = _engine(request)
    if engine is None:
        return {"ledger": None, "runs": [], "unreadable": [],
                "note": "no ledger configured: start `trainplan serve --db URL` (or set TRAINPLAN_DB)"}
    from trainplan.ledger.paths import redact
    from trainplan.ledger.records import MEASURE_KEYS, residual
    from trainplan.ledger.store import read_runs

    result = read_runs(engine, limit=q.limit or None, **q.model_dump(exclude={"limit"}))
    rows = []
    for row in result.rows:
        out = {k: (str(v) if k == "created_at" else v) for k, v in row.items()}
        out["residual"] = {k: residual(row.get(f"est_{k}"), row.get(f"meas_{k}")) for k in MEASURE_KEYS
                           if row.get(f"meas_{k}") is not None}
        rows.append(out)
    return {"ledger": redact(url), "runs": rows, "unreadable": list(result.unreadable)}


@router.post("/runs", summary="record one measured run (only when the server has a ledger)")
def record_run(request: Request, body: RunBody) -> dict[str, Any]:
    if request.app.state.ledger_url is None:
        raise TrainplanError("no ledger configured: this server records nothing (start it with --db URL)")
    from trainplan.api import options_of
    from trainplan.ledger.capture import record_from_options, save
    from trainplan.ledger.records import measured_from_gib

    check_model_name(body.setup.model)
    if body.setup.model is None:
        raise TrainplanError("setup.model is required to record a run")
    options = options_of(body.setup.model, setup_keywords(body.setup))
    record = record_from_options(options, measured_from_gib(**body.measured.model_dump()), source=body.source,
                                 notes=body.notes)
    result = save([record], request.app.state.ledger_url)
    return {"added": result.added, "already_present": result.present, "updated": result.updated}
