"""`/docs`: the API's Swagger UI, served from the package's own copy of its files.

FastAPI's default page loads Swagger UI from a CDN, so on an air-gapped control plane it stayed
blank. `swagger-ui-bundle-v2` ships the files (Swagger UI 5, which renders the OpenAPI 3.1 that
FastAPI writes); they are served under `/docs/static`, open like the page and the spec.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path

STATIC = "/docs/static"


def mount_docs(app: FastAPI) -> None:
    """Serve `/docs` (the app must be created with `docs_url=None`)."""
    app.mount(STATIC, StaticFiles(directory=str(swagger_ui_path)), name="docs-static")

    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title}: API",
            swagger_js_url=f"{STATIC}/swagger-ui-bundle.js",
            swagger_css_url=f"{STATIC}/swagger-ui.css",
            swagger_favicon_url=f"{STATIC}/favicon-32x32.png",
        )

    app.add_api_route("/docs", docs, methods=["GET"], include_in_schema=False)
