"""The layer's shape, checked: dependencies point one way (handlers -> domain -> data
access), only the data-access package talks to AWS, modules stay small, handlers thin, and
the template feeds the stream consumers what the item schema says."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from devstack import template
from podium.dal import schema

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "podium" / "podium"
FUNCTIONS = ROOT / "functions"
# What the data-access layer may import of the layer: itself, and the shared vocabulary
# (records, errors, settings, the JSON codec of exact numbers, the thread pool, the
# Idempotency-Key of a submission and its record, the count tree's nodes and the pure
# decisions on them, which the tree's items hold; the ranking indexes' names; how a record
# class is built).
SHARED = {
    "podium.models",
    "podium.indexes",
    "podium.errors",
    "podium.config",
    "podium.numbers",
    "podium.fanout",
    "podium.idempotency",
    "podium.counttree",
    "podium.values",
}
AWS = ("boto3", "botocore", "mypy_boto3_dynamodb")
MAX_MODULE_LINES = 500
MAX_HANDLER_LINES = 45


def modules() -> list[Path]:
    return sorted(LAYER.rglob("*.py"))


def name_of(path: Path) -> str:
    parts = path.relative_to(LAYER.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports in functions included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def test_only_the_data_access_package_imports_boto3_or_botocore() -> None:
    offenders = {
        name_of(path): sorted(m for m in imported(path) if m.split(".")[0] in AWS)
        for path in modules()
        if not name_of(path).startswith("podium.dal")
    }
    offenders.update(
        {
            f"functions/{path.parent.name}": sorted(m for m in imported(path) if m.split(".")[0] in AWS)
            for path in FUNCTIONS.glob("*/app.py")
        }
    )
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_data_access_package_imports_no_domain_module() -> None:
    known = {name_of(path) for path in modules()}
    for path in LAYER.joinpath("dal").glob("*.py"):
        ours = {m for m in imported(path) if m in known}
        domain = {m for m in ours if not m.startswith("podium.dal") and m not in SHARED and m != "podium"}
        assert domain == set(), f"{name_of(path)} imports {sorted(domain)}"


def test_the_shared_vocabulary_imports_neither_side() -> None:
    known = {name_of(path) for path in modules()}
    for shared in SHARED:
        path = LAYER / f"{shared.split('.')[1]}.py"
        ours = {m for m in imported(path) if m in known} - SHARED
        assert ours == set(), f"{shared} imports {sorted(ours)}"


@pytest.mark.parametrize("path", modules(), ids=lambda p: name_of(p))
def test_no_module_of_the_layer_is_over_500_lines(path: Path) -> None:
    assert len(path.read_text().splitlines()) <= MAX_MODULE_LINES


@pytest.mark.parametrize("path", sorted(FUNCTIONS.glob("*/app.py")), ids=lambda p: p.parent.name)
def test_handlers_are_thin_and_wired_not_built(path: Path) -> None:
    # A handler parses its route and calls one room of the domain, which wiring builds
    text = path.read_text()
    assert len(text.splitlines()) <= MAX_HANDLER_LINES
    assert "Database" not in text
    assert "connect(" not in text


def test_the_templates_stream_filters_are_the_schemas() -> None:
    consumers = {c.function: c for c in template.read().stream_consumers()}
    assert consumers["AggregatorFunction"].filters == schema.AGGREGATOR_FILTERS
    assert consumers["NotifierFunction"].filters == schema.NOTIFIER_FILTERS
    # and what the aggregator is fed covers every item kind its effects read
    patterns = json.dumps(schema.AGGREGATOR_FILTERS)
    for spelled in (schema.PROFILE, schema.SCORE, schema.EVENTS):
        assert spelled in patterns
