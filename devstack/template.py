"""Read ``template.yaml``: the tables, the API routes and the stream consumers it defines.

The local stack takes everything from the template, so that what runs here and what
``sam deploy`` creates cannot drift apart.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"


class _Tag:
    def __init__(self, tag: str, value: Any) -> None:
        self.tag = tag
        self.value = value

    def __repr__(self) -> str:
        return f"!{self.tag} {self.value!r}"


class _Loader(yaml.SafeLoader):
    pass


def _construct_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> _Tag:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type,unused-ignore]
    return _Tag(suffix, value)


_Loader.add_multi_constructor("!", _construct_tag)


def load(path: Path = TEMPLATE) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return dict(yaml.load(handle, Loader=_Loader))  # noqa: S506 - SafeLoader subclass


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    function: str
    code_dir: Path
    handler: str

    @property
    def pattern(self) -> re.Pattern[str]:
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.path))
        return re.compile(f"^{regex}/?$")


@dataclass(frozen=True)
class StreamConsumer:
    function: str
    code_dir: Path
    handler: str
    table: str
    batch_size: int
    batching_window: float
    starting_position: str
    max_retries: int
    bisect: bool
    filters: list[dict[str, Any]] = field(default_factory=list)
    on_failure: str | None = None


@dataclass
class Template:
    document: dict[str, Any]
    table_names: dict[str, str]

    @property
    def resources(self) -> dict[str, Any]:
        return dict(self.document.get("Resources", {}))

    def _functions(self) -> dict[str, dict[str, Any]]:
        return {
            name: resource.get("Properties", {})
            for name, resource in self.resources.items()
            if resource.get("Type") == "AWS::Serverless::Function"
        }

    def _code(self, properties: dict[str, Any]) -> tuple[Path, str]:
        return ROOT / properties["CodeUri"], properties.get("Handler", self._global("Handler"))

    def _global(self, name: str) -> Any:
        return self.document.get("Globals", {}).get("Function", {}).get(name)

    def routes(self) -> list[Route]:
        routes = []
        for name, properties in self._functions().items():
            for event in properties.get("Events", {}).values():
                if event.get("Type") != "Api":
                    continue
                code_dir, handler = self._code(properties)
                event_properties = event["Properties"]
                routes.append(
                    Route(
                        method=str(event_properties["Method"]).upper(),
                        path=str(event_properties["Path"]),
                        function=name,
                        code_dir=code_dir,
                        handler=handler,
                    )
                )
        return routes

    def stream_consumers(self) -> list[StreamConsumer]:
        consumers = []
        for name, properties in self._functions().items():
            for event in properties.get("Events", {}).values():
                if event.get("Type") != "DynamoDB":
                    continue
                p = event["Properties"]
                stream = p["Stream"]
                table = stream.value.split(".")[0] if isinstance(stream, _Tag) else str(stream)
                patterns = [json.loads(f["Pattern"]) for f in p.get("FilterCriteria", {}).get("Filters", [])]
                destination = p.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
                code_dir, handler = self._code(properties)
                consumers.append(
                    StreamConsumer(
                        function=name,
                        code_dir=code_dir,
                        handler=handler,
                        table=table,
                        batch_size=int(p.get("BatchSize", 100)),
                        batching_window=float(p.get("MaximumBatchingWindowInSeconds", 0)),
                        starting_position=str(p.get("StartingPosition", "TRIM_HORIZON")),
                        max_retries=int(p.get("MaximumRetryAttempts", -1)),
                        bisect=bool(p.get("BisectBatchOnFunctionError", False)),
                        filters=patterns,
                        on_failure=destination.value.split(".")[0] if isinstance(destination, _Tag) else None,
                    )
                )
        return consumers

    def tables(self) -> dict[str, dict[str, Any]]:
        """``create_table`` arguments for every DynamoDB table, keyed by logical id."""
        tables = {}
        for name, resource in self.resources.items():
            if resource.get("Type") != "AWS::DynamoDB::Table":
                continue
            p = resource["Properties"]
            request: dict[str, Any] = {
                "TableName": self.table_names.get(name, name),
                "AttributeDefinitions": p["AttributeDefinitions"],
                "KeySchema": p["KeySchema"],
                "BillingMode": "PAY_PER_REQUEST",
            }
            if p.get("GlobalSecondaryIndexes"):
                request["GlobalSecondaryIndexes"] = [
                    {k: v for k, v in index.items() if k in ("IndexName", "KeySchema", "Projection")}
                    for index in p["GlobalSecondaryIndexes"]
                ]
            if p.get("StreamSpecification"):
                request["StreamSpecification"] = {
                    "StreamEnabled": True,
                    "StreamViewType": p["StreamSpecification"]["StreamViewType"],
                }
            tables[name] = request
        return tables

    def time_to_live(self) -> dict[str, str]:
        return {
            name: resource["Properties"]["TimeToLiveSpecification"]["AttributeName"]
            for name, resource in self.resources.items()
            if resource.get("Type") == "AWS::DynamoDB::Table"
            and resource["Properties"].get("TimeToLiveSpecification", {}).get("Enabled")
        }

    def environment(self) -> dict[str, str]:
        """The functions' environment, with ``!Ref`` to a table resolved to its local name."""
        variables = dict(self._global("Environment").get("Variables", {}))
        for properties in self._functions().values():
            variables.update(properties.get("Environment", {}).get("Variables", {}))
        resolved = {}
        for key, value in variables.items():
            if isinstance(value, _Tag) and value.tag == "Ref":
                resolved[key] = self.table_names.get(value.value, value.value)
            elif isinstance(value, _Tag):
                resolved[key] = self._resolve_find_in_map(value)
            else:
                resolved[key] = str(value)
        return resolved

    def _resolve_find_in_map(self, tag: _Tag) -> str:
        if tag.tag != "FindInMap":
            raise ValueError(f"the local stack cannot resolve {tag!r}")
        mapping, key, attribute = tag.value
        stage = self.document["Parameters"]["Stage"]["Default"]
        key = stage if isinstance(key, _Tag) else key
        return str(self.document["Mappings"][mapping][key][attribute])


def read(table_prefix: str = "") -> Template:
    document = load()
    names = {
        name: f"{table_prefix}{name}"
        for name, resource in document.get("Resources", {}).items()
        if resource.get("Type") == "AWS::DynamoDB::Table"
    }
    return Template(document=document, table_names=names)
