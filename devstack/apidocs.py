"""Interactive API docs on the local stack: Swagger UI at ``GET /docs`` for the project's
OpenAPI document, with "Try it out" sending its requests to this stack.

Everything is served from the checkout, so the page works offline: Swagger UI's assets
from the npm package ``swagger-ui-dist`` (``make setup`` installs it into node_modules),
the document from docs/openapi.yaml, read at each request so an edit shows on reload. The
document is served as it is written except for ``servers``, which names this stack alone:
the page and the API it calls are then one origin, and no CORS is involved.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
OPENAPI = ROOT / "docs" / "openapi.yaml"
SWAGGER_UI = ROOT / "node_modules" / "swagger-ui-dist"

PREFIX = "/docs"
DOCUMENT_PATH = f"{PREFIX}/openapi.yaml"
ASSETS_PREFIX = f"{PREFIX}/assets/"

# What the page loads of the package, and the types they are served with. Nothing else of
# node_modules is served: a name outside this table is a 404, whatever its path.
ASSET_TYPES = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
    "favicon-32x32.png": "image/png",
    "favicon-16x16.png": "image/png",
    # what a browser's developer tools ask for when they open the bundle or the styles
    "swagger-ui-bundle.js.map": "application/json",
    "swagger-ui.css.map": "application/json",
}
HTML = "text/html; charset=utf-8"
YAML = "application/yaml; charset=utf-8"  # RFC 9512
# A Host header as a browser sends it (a name or an IPv4 or IPv6 address, and a port):
# anything else is not put into the document.
HOST = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?")

Answer = tuple[int, dict[str, str], bytes]

_PAGE = """<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>Podium API: local stack</title>
    <link rel="stylesheet" type="text/css" href="{assets}swagger-ui.css">
    <link rel="icon" type="image/png" href="{assets}favicon-32x32.png" sizes="32x32">
    <link rel="icon" type="image/png" href="{assets}favicon-16x16.png" sizes="16x16">
    <style>
      body {{ margin: 0; background: #fafafa; }}
      .podium-note {{ font-family: sans-serif; padding: 12px 20px; background: #fff8e1; }}
      .podium-note code {{ background: #f1f1f1; padding: 1px 4px; }}
    </style>
  </head>
  <body>
    <div class="podium-note">{note}</div>
    <div id="swagger-ui"></div>
    <script src="{assets}swagger-ui-bundle.js" charset="utf-8"></script>
    <script>
      window.ui = SwaggerUIBundle({{
        url: "{document}",
        dom_id: "#swagger-ui",
        deepLinking: true,
        // the token pasted into Authorize survives a reload of the page
        persistAuthorization: true,
        // no badge from the public validator: the page makes no request off this stack
        validatorUrl: null,
        presets: [SwaggerUIBundle.presets.apis],
        layout: "BaseLayout"
      }});
    </script>
  </body>
</html>
"""

_WITH_TOKENS = (
    "This stack checks tokens, as a deployed one does. Get one with <code>make token ROLE=admin</code> "
    "(or <code>make token ROLE=player MEMBER=alice</code>), press <b>Authorize</b>, paste it into "
    "<i>bearerAuth</i> (without the word Bearer), then <b>Try it out</b> on any operation."
)
_WITHOUT_TOKENS = (
    "This stack runs with <code>PODIUM_AUTH=off</code>: every caller is an admin, no token is "
    "needed. <b>Try it out</b> on any operation."
)


class ApiDocs:
    """The answers to ``GET /docs``, ``/docs/openapi.yaml`` and ``/docs/assets/<name>``."""

    def __init__(self, base_url: str, *, auth: bool = True, assets: Path = SWAGGER_UI) -> None:
        self.base_url = base_url.rstrip("/")
        self.auth = auth
        self.assets = assets

    def handle(self, method: str, path: str, headers: Mapping[str, str]) -> Answer | None:
        """The answer to a request for one of the docs' paths; None for any other path."""
        if path != PREFIX and not path.startswith(f"{PREFIX}/"):
            return None
        if method not in ("GET", "HEAD"):
            return _text(405, "the docs answer GET only")
        if path in (PREFIX, f"{PREFIX}/"):
            return self.page()
        if path == DOCUMENT_PATH:
            return self.document(headers)
        if path.startswith(ASSETS_PREFIX):
            return self.asset(path[len(ASSETS_PREFIX) :])
        return _text(404, f"no such page of the docs: {path}; open {PREFIX}")

    def page(self) -> Answer:
        if not (self.assets / "swagger-ui-bundle.js").is_file():
            return _text(503, "Swagger UI is not installed: `make setup` (npm ci) installs swagger-ui-dist")
        note = _WITH_TOKENS if self.auth else _WITHOUT_TOKENS
        body = _PAGE.format(assets=ASSETS_PREFIX, document=DOCUMENT_PATH, note=note)
        return 200, {"Content-Type": HTML, "Cache-Control": "no-cache"}, body.encode()

    def document(self, headers: Mapping[str, str]) -> Answer:
        """docs/openapi.yaml, its ``servers`` replaced by this stack's URL as the browser
        reached it (the Host it sent: 127.0.0.1 and localhost are different origins)."""
        document: dict[str, Any] = yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))
        document["servers"] = [{"url": self.server_url(headers), "description": "This local stack"}]
        text = yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=110)
        return 200, {"Content-Type": YAML, "Cache-Control": "no-cache"}, text.encode()

    def server_url(self, headers: Mapping[str, str]) -> str:
        host = next((value for name, value in headers.items() if name.lower() == "host"), "")
        return f"http://{host}" if HOST.fullmatch(host) else self.base_url

    def asset(self, name: str) -> Answer:
        content_type = ASSET_TYPES.get(name)
        if content_type is None:
            return _text(404, f"no such asset: {name}")
        try:
            data = (self.assets / name).read_bytes()
        except FileNotFoundError:
            return _text(404, f"{name} is missing from swagger-ui-dist: run `make setup`")
        return 200, {"Content-Type": content_type, "Cache-Control": "max-age=3600"}, data


def _text(status: int, message: str) -> Answer:
    return status, {"Content-Type": "text/plain; charset=utf-8"}, message.encode()
