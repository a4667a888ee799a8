"""The admin web console at `/ui`: server-rendered Jinja2 pages and fragments, htmx (vendored,
`static/htmx.min.js`, htmx.org 2.0.11, 0BSD) and a small script; no build step, no CDN.

Served by the API app itself (same port, same authenticators and roles): pages are open shells,
every piece of data is a fragment behind the viewer role, and the buttons call the v1 API.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.staticfiles import StaticFiles

from reconciler.api.console import fragments, pages
from reconciler.api.console.rendering import STATIC, TEMPLATES


def mount_console(app: FastAPI) -> None:
    for name in TEMPLATES.list_templates():
        TEMPLATES.get_template(name)  # compiled now, not in the first user's request
    app.include_router(pages.router)
    app.include_router(fragments.router)
    app.mount("/ui/static", StaticFiles(directory=STATIC), name="console-static")
