"""Every handler has one shape: the path, then ``authorize``, then the body and the query.
So a request the caller may not make is 401 or 403 whatever its body, on every route (a
bad body was 400 before 401 on some routes and 401 first on others)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

FUNCTIONS = Path(__file__).resolve().parents[2] / "functions"
HANDLERS = sorted(p for p in FUNCTIONS.glob("*/app.py") if "http.authorize(" in p.read_text())
PARSING = re.compile(r"http\.body\(|http\.query\(|validation\.(?!ADMIN_MEMBER_FIELDS)")


@pytest.mark.parametrize("handler", HANDLERS, ids=lambda p: p.parent.name)
def test_a_handler_authorizes_before_it_parses(handler: Path) -> None:
    lines = handler.read_text().splitlines()
    authorized = next(i for i, line in enumerate(lines) if "http.authorize(" in line)
    parsed = [i for i, line in enumerate(lines) if PARSING.search(line)]
    assert all(i > authorized for i in parsed), f"{handler}: line {min(parsed) + 1} parses before authorize"


def test_the_handlers_are_found() -> None:
    assert len(HANDLERS) >= 18
