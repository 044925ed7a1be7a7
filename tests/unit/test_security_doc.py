"""docs/security.md names the routes that run no authorizer: its counts are the template's."""

from __future__ import annotations

import re
from pathlib import Path

from devstack import template

DOC = Path(__file__).resolve().parents[2] / "docs" / "security.md"
WORDS = {
    w: n
    for n, w in enumerate(
        [
            "zero",
            "one",
            "two",
            "three",
            "four",
            "five",
            "six",
            "seven",
            "eight",
            "nine",
            "ten",
            "eleven",
            "twelve",
        ]
    )
}


def _said(pattern: str) -> list[int]:
    return [WORDS[w] for w in re.findall(pattern, DOC.read_text())]


def test_the_routes_without_an_authorizer_are_counted_as_the_template_has_them() -> None:
    # Given the template's routes that no authorizer guards, the page's own two among them
    open_routes = [r for r in template.read().routes() if r.authorizer is None]
    page = [r for r in open_routes if r.function == "WebFunction"]
    assert page, "the page is served without a token"

    # Then the page says how many there are, everywhere it counts them
    assert _said(r"every route except the (\w+) below") == [len(open_routes)]
    counted = _said(r"the (\w+) read routes that `publicRead` opens")
    counted += _said(r"once per request on the (\w+) public-capable routes")
    assert counted == [len(open_routes) - len(page)] * 2


def test_every_test_the_page_names_exists() -> None:
    # Given each test file, and each test in it, that the threats table names
    # (`tests/unit/x.py::test_y`, and `::test_z` for another test of the same file)
    root = DOC.parents[1]
    named, current = [], None
    for match in re.finditer(r"`(tests/[\w/]+\.py)(?:::(\w+))?`|`::(\w+)`", DOC.read_text()):
        path, test, same_file = match.groups()
        current = path or current
        if test or same_file:
            named.append((current, test or same_file))
        elif path:
            named.append((path, None))
    assert len(named) > 20

    # Then every one of them is there
    for path, test in named:
        assert path is not None
        assert (root / path).is_file(), path
        if test is not None:
            assert f"def {test}(" in (root / path).read_text(), f"{path}::{test}"


def granted_rows() -> dict[str, tuple[str, str, str]]:
    """Each function's grants as the template says them (the least-privilege test's reading
    of its policies): its actions on the two tables, on the ranking indexes, and on
    anything else (the page's least-privilege table)."""
    from tests.unit.test_least_privilege import granted, template_functions

    def verbs(actions: set[str]) -> str:
        return ", ".join(sorted(action.split(":")[1] for action in actions))

    rows: dict[str, tuple[str, str, str]] = {}
    for name, properties in template_functions().items():
        by_resource: dict[str, set[str]] = {}
        for action, resource in granted(properties):
            kind = "index" if "/index/" in resource else resource
            by_resource.setdefault(kind, set()).add(action)
        tables = by_resource.pop("LeaderboardTable", set()) | by_resource.pop("StateTable", set())
        index = by_resource.pop("index", set())
        others = "; ".join(f"`{resource}`: {verbs(acts)}" for resource, acts in sorted(by_resource.items()))
        rows[name.removesuffix("Function")] = (verbs(tables) or "none", verbs(index), others)
    return rows


def test_the_least_privilege_table_is_the_templates() -> None:
    # Given the rows of the page's table (function, tables, indexes, other)
    text = DOC.read_text()
    table = text[text.index("| Function | `LeaderboardTable` and `StateTable` |") :].split("\n\n")[0]
    written = {
        cells[0]: (cells[1], cells[2], cells[3])
        for cells in ([c.strip() for c in line.strip("|").split("|")] for line in table.splitlines()[2:])
    }

    # Then they are what the template grants each function, every function once
    assert written == granted_rows()
