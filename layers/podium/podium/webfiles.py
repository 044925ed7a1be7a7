"""The live leaderboard page's files, as a route of the API serves them (functions/web,
docs/web.md): read once per container, each answered with its content type and the
headers a page that holds a token should carry. ``podium.http`` gives every answer its
``ETag`` and turns a revalidation into a 304, as for the API's own reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlencode

from podium.errors import NotFound
from podium.http import Response
from podium.values import frozen

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
}

# The page runs its own files only and talks to its own origin only: a script injected
# from elsewhere could read the bearer token it keeps. (It builds every row with
# textContent, so a member id is never markup; this is the second fence.)
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; "
        "img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


@frozen
class WebFile:
    content_type: str
    text: str

    def answer(self) -> Response:
        return Response(200, self.content_type, self.text, SECURITY_HEADERS)


def read_file(path: Path) -> WebFile:
    return WebFile(CONTENT_TYPES[path.suffix], path.read_text(encoding="utf-8"))


class Site:
    """The page (``GET /``) and the files it loads (``GET /web/{asset}``): every file of
    ``assets`` whose type is known, by name; nothing else is served."""

    def __init__(self, page: Path, assets: Path) -> None:
        self.page = read_file(page)
        self.assets = {
            path.name: read_file(path) for path in sorted(assets.iterdir()) if path.suffix in CONTENT_TYPES
        }

    def index(self, request_context: Mapping[str, Any] | None, query: Mapping[str, str]) -> Response:
        """The page; or, asked for without its trailing slash (a stage's root: ``/dev``), a
        redirect to ``/dev/``, so that its relative links resolve under the stage."""
        address = str((request_context or {}).get("path") or "/")
        if not address.endswith("/"):
            location = address + "/" + (f"?{urlencode(dict(query))}" if query else "")
            return Response(301, headers={"Location": location})
        return self.page.answer()

    def asset(self, raw_name: str) -> Response:
        found = self.assets.get(unquote(raw_name))
        if found is None:
            raise NotFound(f"the page has no file {unquote(raw_name)}")
        return found.answer()
