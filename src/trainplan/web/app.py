"""The ASGI app of `trainplan serve`: the JSON API (routes.py, listings.py), its OpenAPI schema at
/openapi.json, and the page at / with its scripts and styles under /static (served from the package:
no CDN, works offline).

Errors: a TrainplanError (bad input the library refuses) is a 400, a parameter of the wrong type a
422, an unknown path a 404, a body over the limit a 413, each as {"error": "one line"}. Anything
else is a bug: logged with its traceback and answered 500 (tests run with the exception raised).
"""

from __future__ import annotations

import logging
import os
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from trainplan import __version__, i18n
from trainplan.errors import TrainplanError
from trainplan.safeio import CONFIG_LIMIT_BYTES
from trainplan.web import page

log = logging.getLogger("trainplan.web")

BODY_LIMIT_BYTES = 2 * CONFIG_LIMIT_BYTES + 64 * 1024   # two configs' worth and the form around them


def one_line(text: str) -> str:
    return " ".join(line.strip() for line in str(text).splitlines() if line.strip()) or "error"


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": one_line(message)}, status_code=status)


def _validation_line(exc: RequestValidationError) -> str:
    errors = exc.errors()
    if not errors:
        return "invalid request"
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("query", "body")) or "request"
    given = first.get("input")
    shown = "" if isinstance(given, (dict, list)) or given is None else f" (got {str(given)[:60]!r})"
    more = f"; and {len(errors) - 1} more" if len(errors) > 1 else ""
    return f"{where}: {first.get('msg', 'invalid')}{shown}{more}"


class BodyLimit:
    """ASGI middleware: a request body over `limit` bytes is answered 413 (by Content-Length before
    it is read, or as soon as the chunks read pass the limit)."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or ()).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await _error(413, f"request body over the limit of {self.limit:,} bytes")(scope, receive, send)
            return
        seen = 0

        async def limited() -> dict:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:   # FastAPI passes an HTTPException raised while reading the body on as it is
                raise StarletteHTTPException(413, f"request body over the limit of {self.limit:,} bytes")
            return message

        await self.app(scope, limited, send)


def create_app(*, db: str | None = None, body_limit: int = BODY_LIMIT_BYTES) -> FastAPI:
    """The app; `db` (else $TRAINPLAN_DB) is the ledger: without one, /api/runs lists nothing and
    writes nothing."""
    from trainplan.web import listings, routes

    app = FastAPI(title="trainplan", version=__version__, docs_url=None, redoc_url=None,   # their pages load a CDN
                  description="Will this LLM training run fit, how long, how much: the JSON API of `trainplan "
                              "serve` over the same library as the CLI (results are the CLI's --json).")
    given = db or os.environ.get("TRAINPLAN_DB")
    if given:
        from trainplan.ledger.paths import db_url

        app.state.ledger_url = db_url(given)
    else:
        app.state.ledger_url = None
    app.state.upload_limit = CONFIG_LIMIT_BYTES

    @app.exception_handler(TrainplanError)
    async def _bad_input(request: Request, exc: TrainplanError) -> JSONResponse:
        return _error(400, str(exc))

    @app.exception_handler(RequestValidationError)
    async def _bad_type(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _error(422, _validation_line(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, str(exc.detail))

    @app.exception_handler(Exception)
    async def _bug(request: Request, exc: Exception) -> JSONResponse:
        log.error("internal error on %s %s", request.method, request.url.path, exc_info=exc)
        return _error(500, f"internal error: {type(exc).__name__}: {exc}")

    app.include_router(routes.router)
    if routes.export_available():
        app.include_router(routes.export_router)
    app.include_router(listings.router)
    app.mount("/static", StaticFiles(directory=page.STATIC_DIR), name="static")

    @app.get("/", include_in_schema=False)
    def index(lang: str | None = None) -> HTMLResponse:
        return HTMLResponse(page.render(i18n.normalize(lang) if lang else "en"))

    app.add_middleware(BodyLimit, limit=body_limit)
    return app
