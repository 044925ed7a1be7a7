"""What a function's log says to CloudWatch: its embedded metric format (EMF) lines read as
CloudWatch Logs reads them, each metric with its namespace, its dimensions and its values;
and the API's functions run in this process as Lambda runs them, to print those lines."""

from __future__ import annotations

import json
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EVENTS = Path(__file__).resolve().parent.parent / "events"


@dataclass(frozen=True)
class EmfMetric:
    namespace: str
    name: str
    dimensions: frozenset[tuple[str, str]]
    values: tuple[float, ...]
    unit: str

    @property
    def dimension_map(self) -> dict[str, str]:
        return dict(self.dimensions)


def emf_metrics(output: str) -> list[EmfMetric]:
    """Every metric of every EMF line in ``output`` (other lines, such as structured logs,
    are skipped): one per metric and dimension set, as CloudWatch files them."""
    found: list[EmfMetric] = []
    for line in output.splitlines():
        try:
            document: Any = json.loads(line)
        except ValueError:
            continue
        if not isinstance(document, dict) or "_aws" not in document:
            continue
        for directive in document["_aws"]["CloudWatchMetrics"]:
            for names in directive["Dimensions"]:
                dimensions = frozenset((name, str(document[name])) for name in names)
                for metric in directive["Metrics"]:
                    raw = document[metric["Name"]]
                    values = tuple(float(v) for v in (raw if isinstance(raw, list) else [raw]))
                    found.append(
                        EmfMetric(directive["Namespace"], metric["Name"], dimensions, values, metric["Unit"])
                    )
    return found


def one_value(metrics: list[EmfMetric], name: str, **dimensions: str) -> float:
    """The single value of ``name`` published with exactly these dimensions (besides
    Powertools' ``service``)."""
    matching = [
        m
        for m in metrics
        if m.name == name and {k: v for k, v in m.dimension_map.items() if k != "service"} == dimensions
    ]
    assert len(matching) == 1, f"{name} {dimensions}: {matching}"
    assert len(matching[0].values) == 1, matching[0]
    return matching[0].values[0]


def route_event(name: str, board: str, query: dict[str, str] | None = None) -> dict[str, Any]:
    """The sample event of a route's function (events/<name>.json), pointed at ``board``,
    with ``query`` as its query string."""
    event: dict[str, Any] = json.loads((EVENTS / f"{name}.json").read_text())
    event["path"] = event["path"].replace("/images", f"/{board}", 1)
    event["pathParameters"] = {**(event["pathParameters"] or {}), "boardId": board}
    event["queryStringParameters"] = query
    event["multiValueQueryStringParameters"] = {k: [v] for k, v in (query or {}).items()} or None
    return event


class RouteFunctions:
    """The API's functions as Lambda runs them (each module loaded once, on the table and
    DynamoDB the environment names): ``functions.invoke("top", board, {"limit": "10"})``."""

    def __init__(self) -> None:
        from devstack import template

        self.routes = {route.code_dir.name: route for route in template.read().routes()}
        self.loaded: dict[str, tuple[str, Any]] = {}

    def invoke(self, name: str, board: str, query: dict[str, str] | None = None) -> dict[str, Any]:
        from devstack.functions import LambdaContext, load_handler

        route = self.routes[name]
        if name not in self.loaded:
            module = f"podium_emf_test_{name}_{uuid.uuid4().hex[:8]}"
            self.loaded[name] = (module, load_handler(module, route.code_dir, route.handler))
        result: dict[str, Any] = self.loaded[name][1](
            route_event(name, board, query), LambdaContext(route.function)
        )
        return result

    def unload(self) -> None:
        for module, _ in self.loaded.values():
            sys.modules.pop(module, None)
