"""The job endpoints: /api/estimate, /api/plan, /api/fit, /api/table, /api/import-config and
/api/export. Each takes the setup as query parameters (GET: a shareable URL) or as JSON (POST, with
uploads), calls trainplan.api and answers the result's to_dict(), the CLI's --json; /api/table also
answers the files `trainplan table --format X` writes (web/tables.py). /api/export with uploads
(POST) exports the uploaded configs' job, read as every upload is (confined to its folder). No formulas."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, File, Query, Request, UploadFile
from fastapi.responses import JSONResponse, Response

import trainplan
from trainplan.errors import TrainplanError
from trainplan.safeio import CONFIG_LIMIT_BYTES
from trainplan.web.params import (
    ExportBody,
    ExportQuery,
    FitBody,
    PlanBody,
    PlanSetup,
    Setup,
    SetupBody,
    TableSetup,
    check_model_name,
    names,
    setup_keywords,
)
from trainplan.web.uploads import MAX_FILES, import_configs, upload_dir

ERRORS = {400: {"description": "bad input: {\"error\": one line}"},
          413: {"description": "request body over the size limit"},
          422: {"description": "a parameter of the wrong type: {\"error\": one line}"}}

router = APIRouter(prefix="/api", responses=ERRORS)


def _with_uploads(record: Setup, call: Callable[..., Any]) -> Any:
    """`call(model, **keywords)` with the record's uploads written to a private folder first."""
    config_json = getattr(record, "config_json", None)
    configs = getattr(record, "configs", None) or []
    check_model_name(record.model)
    keywords = setup_keywords(record)
    if config_json is None and not configs:
        return call(record.model, **keywords)
    with upload_dir() as folder:
        model = folder.add_model_config(config_json) if config_json is not None else record.model
        for upload in configs:
            folder.add_config(upload.name, upload.text)
        if folder.configs:
            folder.check_configs()
            keywords["configs"] = tuple(folder.configs)
        from trainplan.importers.read import confined_reads

        with confined_reads():           # the library reads the uploads: never a server file they name
            return folder.scrub(call(model, **keywords))


def _estimate(model: Any, **keywords: Any) -> dict[str, Any]:
    return trainplan.estimate(model, **keywords).to_dict()


def _fit(model: Any, **keywords: Any) -> dict[str, Any]:
    return trainplan.fit(model, **keywords).to_dict()


def _planner(record: PlanSetup) -> Callable[..., dict[str, Any]]:
    def call(model: Any, **keywords: Any) -> dict[str, Any]:
        gpus = names(record.gpus)
        result = trainplan.plan(model, methods=names(record.methods), gpus=gpus or None, max_gpus=record.max_gpus,
                                gpus_per_node=record.gpus_per_node, global_batch=record.global_batch,
                                budget=record.budget, deadline_hours=record.deadline_hours, sort=record.sort,
                                top=record.top, **keywords)
        out = result.to_dict()
        ranks = {id(p.found): p.rank for p in result.plans}
        out["points"] = [{"cost": f.cost_value, "time_s": f.time_s, "pareto": on, "rank": ranks.get(id(f)),
                          "gpu": f.rentable.gpu.id, "num_gpus": f.shape.num_gpus, "engine": f.shape.engine()}
                         for f, on in zip(result.found, result.pareto)]
        return out
    return call


@router.get("/estimate", summary="memory per GPU, time and cost of one setup (trainplan estimate --json)")
def estimate_get(q: Annotated[Setup, Query()]) -> dict[str, Any]:
    return _with_uploads(q, _estimate)


@router.post("/estimate", summary="the same with a JSON body: config_json (a model's config.json) and configs")
def estimate_post(body: SetupBody) -> dict[str, Any]:
    return _with_uploads(body, _estimate)


@router.get("/plan", summary="the setups that fit, ranked, with the Pareto front and every point found")
def plan_get(q: Annotated[PlanSetup, Query()]) -> dict[str, Any]:
    return _with_uploads(q, _planner(q))


@router.post("/plan", summary="the same with a JSON body (uploads allowed)")
def plan_post(body: PlanBody) -> dict[str, Any]:
    return _with_uploads(body, _planner(body))


@router.get("/fit", summary="the largest micro-batch and the longest sequence that fit one layout")
def fit_get(q: Annotated[Setup, Query()]) -> dict[str, Any]:
    return _with_uploads(q, _fit)


@router.post("/fit", summary="the same with a JSON body (uploads allowed)")
def fit_post(body: FitBody) -> dict[str, Any]:
    return _with_uploads(body, _fit)


@router.get("/table", summary="the resource table: JSON (as trainplan table --json, with the page's layout), or "
                               "the file trainplan table --format csv|xlsx|html|markdown writes",
            responses={200: {"content": {"application/json": {}, "text/csv": {}, "text/html": {}, "text/markdown": {},
                                         "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": {}}}})
def table_get(request: Request, q: Annotated[TableSetup, Query()]) -> Response:
    return _table(q, request.app.state.ledger_url)


@router.post("/table", summary="the same with a JSON body")
def table_post(request: Request, body: TableSetup) -> Response:
    return _table(body, request.app.state.ledger_url)


def _table(q: TableSetup, ledger: str | None) -> Response:
    from trainplan.planner.table import resource_table
    from trainplan.web import tables

    lang = tables.language_of(q.lang)           # a bad one is refused before anything is computed
    tr = tables.table_request(q, ledger)
    if q.tiers:                                 # words of the library's, in English, as the CLI's
        title, rows, data = tables.tiers_download(tr, q.format)
        if data is None:
            return JSONResponse(tables.plain({"title": title, "tiers": rows}))
    else:
        result = resource_table(tr)
        with tables.in_language(lang):
            if q.format == "json":
                return JSONResponse(tables.table_view(result))
            data = tables.download(result, q.format, q.paper)
    headers = {"Content-Disposition": f'attachment; filename="trainplan-table.{tables.SUFFIX[q.format]}"'}
    return Response(data, media_type=tables.MEDIA[q.format], headers=headers)


@router.post("/import-config", summary="upload training configs (as --from): the setup they say, with sources")
async def import_config(files: Annotated[list[UploadFile], File(description="config files, later over earlier")]
                        ) -> dict[str, Any]:
    if not files or len(files) > MAX_FILES:
        raise TrainplanError(f"upload 1 to {MAX_FILES} config files, got {len(files or [])}")
    with upload_dir() as folder:
        for upload in files:
            data = await upload.read(CONFIG_LIMIT_BYTES + 1)
            folder.add_config(upload.filename or "config", data)
        return import_configs(folder)


def export_available() -> bool:
    """True when trainplan.export.write (build_export) is importable in this build."""
    try:
        from trainplan.export.write import build_export  # noqa: F401
    except ImportError:
        return False
    return True


def export_formats() -> list[str]:
    from trainplan.export.base import EXPORTERS

    return list(EXPORTERS) if export_available() else []


export_router = APIRouter(prefix="/api", responses=ERRORS)


def _exporter(formats: str | None) -> Callable[..., dict[str, Any]]:
    def call(model: Any, **keywords: Any) -> dict[str, Any]:
        from trainplan.estimation import estimate as estimate_job
        from trainplan.export.write import build_export

        job = trainplan.resolve(model, **keywords)
        return build_export(job, estimate_job(job), formats).to_dict()
    return call


@export_router.get("/export", summary="the configs and launch lines of one setup, per framework format")
def export_get(q: Annotated[ExportQuery, Query()]) -> dict[str, Any]:
    return _with_uploads(q, _exporter(q.formats))


@export_router.post("/export", summary="the same with a JSON body: the job of the uploaded configs (as --from, "
                                       "the fields given over them) or of an uploaded config.json")
def export_post(body: ExportBody) -> dict[str, Any]:
    return _with_uploads(body, _exporter(body.formats))
