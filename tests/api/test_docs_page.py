"""`/docs` works on an air-gapped control plane: the page and every file it loads come from
the mothership itself, open like the spec, and render the OpenAPI 3.1 FastAPI writes."""

from __future__ import annotations

import re

from tests.api.support import Api


async def test_the_docs_page_loads_nothing_from_elsewhere(api: Api) -> None:
    page = await api.client.get("/docs")

    assert page.status_code == 200
    assert "text/html" in page.headers["content-type"]
    sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert sources
    assert all(source.startswith("/") for source in sources), sources  # no CDN
    for source in sources:
        served = await api.client.get(source)
        assert served.status_code == 200, source
        assert served.content
    script = await api.client.get("/docs/static/swagger-ui-bundle.js")
    assert "javascript" in script.headers["content-type"]
    assert "5.31.0" in script.text[:20000] or "SwaggerUIBundle" in script.text
    spec = (await api.client.get("/openapi.json")).json()
    assert spec["openapi"].startswith("3.1")
