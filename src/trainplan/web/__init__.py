"""`trainplan serve`: the web page and the JSON API (extra `web`: FastAPI, uvicorn, python-multipart).

    app.py      the ASGI app: error handling (one-line JSON errors), body limit, the page, /static
    params.py   the typed, frozen request records (the setup flags as query or JSON fields)
    routes.py   /api/estimate, /api/plan, /api/fit, /api/table, /api/import-config, /api/export
    tables.py   /api/table's answers: the CLI's table writers (same files), its JSON with the page's layout
    listings.py /api/models, /api/gpus, /api/prices, /api/runs, /api/info
    uploads.py  uploaded configs: a private temp folder, the library's safe readers
    page.py     static/index.html in English or Chinese (gettext domain "web")
    static/     the page's script (charts drawn as SVG by hand), styles: no CDN, works offline

Nothing here computes an estimate: every number comes from trainplan.api. FastAPI is imported by
this package and the serve command only, never on the estimate path.
"""


def create_app(**kwargs):
    """See trainplan.web.app.create_app (FastAPI is imported on first use)."""
    from trainplan.web.app import create_app as create

    return create(**kwargs)
