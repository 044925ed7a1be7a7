"""The live leaderboard page's function (functions/web): the page and every file it loads
are served with their types and validators, nothing else is, and the page asked for
without its trailing slash (a stage's root) sends the browser to the address its relative
links need. The page in a real browser is tests/e2e/test_web_page.py's."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from tests.unit import test_events
from tests.unit.test_events import Invoke, load_event

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "functions" / "web" / "assets"
invoke = test_events.invoke  # the sample events' runner, on moto's tables (the page reads none)

# What a file of the page loads: <link href> and <script src> of the page, the imports of
# a module.
PAGE_REFERENCES = re.compile(r'(?:href|src)="(web/[^"]+)"')
MODULE_IMPORTS = re.compile(r'from "\./([^"]+)"')


def headers(result: dict[str, Any]) -> dict[str, str]:
    return {name: values[0] for name, values in result["multiValueHeaders"].items()}


def get(
    invoke: Invoke, path: str, *, context_path: str | None = None, if_none_match: str | None = None
) -> Any:
    """The page's sample event, sent to ``path`` instead."""
    event = load_event("web")
    event["path"] = path
    event["requestContext"]["path"] = context_path or f"/dev{path}"
    if if_none_match:
        event["headers"]["If-None-Match"] = if_none_match
        event["multiValueHeaders"]["If-None-Match"] = [if_none_match]
    return invoke("web", event)


def test_the_page_and_every_file_it_loads_are_served_with_their_type(invoke: Invoke) -> None:
    # Given the page, as a browser gets it at the stage's root
    page = invoke("web")
    assert page["statusCode"] == 200, page["body"]
    assert headers(page)["Content-Type"] == "text/html; charset=utf-8"

    # When every file it loads is asked for, and every module those import
    wanted = PAGE_REFERENCES.findall(page["body"])
    served: dict[str, dict[str, Any]] = {}
    while wanted:
        path = "/" + wanted.pop()
        if path in served:
            continue
        served[path] = get(invoke, path)
        if path.endswith(".js"):
            wanted += [f"web/{name}" for name in MODULE_IMPORTS.findall(served[path]["body"])]

    # Then each is there with its type, and together they are the assets folder
    types = {path: headers(result)["Content-Type"] for path, result in served.items()}
    assert all(result["statusCode"] == 200 for result in served.values()), types
    assert types["/web/page.css"] == "text/css; charset=utf-8"
    assert types["/web/main.js"] == "text/javascript; charset=utf-8"
    assert {path.rsplit("/", 1)[1] for path in served} == {path.name for path in ASSETS.iterdir()}


def test_the_page_runs_only_its_own_files_and_can_be_revalidated(invoke: Invoke) -> None:
    # Given the page and its main module
    for path in ("/", "/web/main.js"):
        first = get(invoke, path)
        answered = headers(first)

        # Then only this origin's scripts run, nothing guesses types, and a cache must revalidate
        policy = answered["Content-Security-Policy"]
        for directive in ("default-src 'none'", "script-src 'self'", "connect-src 'self'"):
            assert directive in policy, path
        assert answered["X-Content-Type-Options"] == "nosniff"
        assert answered["Cache-Control"] == "no-cache"

        # And asked again with its ETag, it is a 304 without a body
        again = get(invoke, path, if_none_match=answered["ETag"])
        assert again["statusCode"] == 304, path
        assert again["body"] == ""


def test_the_stage_root_without_its_slash_is_sent_to_the_slash(invoke: Invoke) -> None:
    # When the browser asks for https://.../dev?board=images (API Gateway routes it to "/")
    result = get(invoke, "/", context_path="/dev")

    # Then it is sent to /dev/, where the page's relative links resolve under the stage
    assert result["statusCode"] == 301
    assert headers(result)["Location"] == "/dev/?board=images"


@pytest.mark.parametrize("name", ["nothing.js", "page.html", "..%2Fapp.py", "main.js.map"])
def test_no_other_file_is_served(invoke: Invoke, name: str) -> None:
    # When a file that is not one of the page's assets is asked for
    result = get(invoke, f"/web/{name}")

    # Then the answer is the API's 404
    assert result["statusCode"] == 404
    assert json.loads(result["body"])["code"] == "NotFound"
