"""The CloudWatch dashboard of template.yaml (``PodiumDashboard``), rendered as CloudFormation
would render it (its ``!Sub`` variables replaced by made-up names, one per resource) and
read as CloudWatch reads it: every AWS metric names a resource of this template, every
metric of the service's own namespace is one the code really emits with those very
dimensions (else the widget stays empty), and each thing an operator must see is there."""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pytest

import podium.wiring
from devstack import template
from devstack.functions import LambdaContext, load_handler
from devstack.streams import StreamTail
from podium import telemetry
from podium.access import Route
from podium.config import Settings
from podium.stream.filters import matches
from tests.emf import EmfMetric, emf_metrics

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = "PodiumDashboard"
PSEUDO = {"AWS::Region": "xx-fake-1", "AWS::StackName": "fake-stack", "AWS::AccountId": "000000000000"}
SUB_VARIABLE = re.compile(r"\$\{([^}]+)\}")

# What each AWS namespace publishes (its documentation's lists): a name or dimension
# spelled otherwise is a widget that stays empty.
AWS_METRICS = {
    "AWS/Lambda": {"Invocations", "Duration", "Errors", "Throttles", "IteratorAge", "ConcurrentExecutions"},
    "AWS/ApiGateway": {"Count", "4XXError", "5XXError", "Latency", "IntegrationLatency"},
    "AWS/DynamoDB": {
        "ReadThrottleEvents",
        "WriteThrottleEvents",
        "ThrottledRequests",
        "ConsumedReadCapacityUnits",
        "ConsumedWriteCapacityUnits",
        "SuccessfulRequestLatency",
        "SystemErrors",
    },
    "AWS/SQS": {"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage"},
}
AWS_DIMENSIONS = {
    "AWS/Lambda": [{"FunctionName"}],
    "AWS/ApiGateway": [{"ApiName", "Stage"}, {"ApiName", "Stage", "Method", "Resource"}],
    "AWS/DynamoDB": [{"TableName"}, {"TableName", "GlobalSecondaryIndexName"}, {"TableName", "Operation"}],
    "AWS/SQS": [{"QueueName"}],
}


# -- the dashboard as CloudWatch gets it ----------------------------------------------------


@cache
def document() -> dict[str, Any]:
    return template.load()


def resources() -> dict[str, Any]:
    found: dict[str, Any] = document()["Resources"]
    return found


def of_type(kind: str) -> set[str]:
    return {name for name, resource in resources().items() if resource["Type"] == kind}


def fake(variable: str) -> str:
    """What CloudFormation would put for ``${variable}``: a pseudo parameter's value, a
    parameter's, a resource's name (Ref) or attribute (GetAtt), made up but telling which."""
    if variable in PSEUDO:
        return PSEUDO[variable]
    name, _, attribute = variable.partition(".")
    assert name in document()["Parameters"] or name in resources(), f"${{{variable}}} names nothing"
    return f"fake:{name}:{attribute}" if attribute else f"fake:{name}"


def referenced(value: str) -> tuple[str, str]:
    """The resource (and attribute, '' for a Ref) a made-up value stands for."""
    assert value.startswith("fake:"), f"{value!r} names no resource of the template"
    _, name, *attribute = value.split(":")
    return name, attribute[0] if attribute else ""


def resolve(value: Any) -> str:
    """A property's value as the dashboard sees it (a plain value or a ``!Ref``)."""
    if isinstance(value, template._Tag):
        assert value.tag == "Ref", value
        return fake(str(value.value))
    return str(value)


@cache
def dashboard() -> dict[str, Any]:
    body = resources()[DASHBOARD]["Properties"]["DashboardBody"]
    assert isinstance(body, template._Tag)
    assert body.tag == "Sub"
    rendered = SUB_VARIABLE.sub(lambda found: fake(found.group(1)), str(body.value))
    parsed: dict[str, Any] = json.loads(rendered)
    return parsed


@dataclass(frozen=True)
class Row:
    """One line of a metric widget: a metric, its dimensions and the statistic drawn."""

    widget: str
    namespace: str
    name: str
    dimensions: tuple[tuple[str, str], ...]
    stat: str

    @property
    def dimension_map(self) -> dict[str, str]:
        return dict(self.dimensions)


def rows() -> list[Row]:
    found = []
    for widget in dashboard()["widgets"]:
        if widget["type"] != "metric":
            continue
        properties = widget["properties"]
        for line in properties["metrics"]:
            options = line[-1] if isinstance(line[-1], dict) else {}
            names = line[:-1] if options else line
            # every row spelled out: no "." or "..." repeating the row above
            assert all(part not in (".", "...") for part in names), line
            namespace, name, *pairs = names
            assert len(pairs) % 2 == 0, line
            dimensions = tuple(zip(pairs[::2], pairs[1::2], strict=True))
            stat = options.get("stat", properties.get("stat"))
            found.append(Row(properties["title"], namespace, name, dimensions, stat))
    return found


def app_namespace() -> str:
    return str(document()["Globals"]["Function"]["Environment"]["Variables"]["POWERTOOLS_METRICS_NAMESPACE"])


def routes() -> list[template.Route]:
    return template.read().routes()


# -- the dashboard's own shape ----------------------------------------------------------------


def test_the_widgets_fit_the_grid_without_overlapping() -> None:
    # Given the rendered body (it parsed as JSON: every variable named something)
    taken: set[tuple[int, int]] = set()
    for widget in dashboard()["widgets"]:
        # Then each widget lies within the 24 columns and covers cells no other covers
        x, y, width, height = (widget[k] for k in ("x", "y", "width", "height"))
        assert x >= 0, widget
        assert x + width <= 24, widget
        cells = {(column, line) for column in range(x, x + width) for line in range(y, y + height)}
        assert not cells & taken, widget["properties"].get("title")
        taken |= cells


def test_the_dashboard_is_named_after_its_stack_and_region() -> None:
    # Given the dashboard's name as written (a dashboard's name is unique in the account)
    name = resources()[DASHBOARD]["Properties"]["DashboardName"]
    # Then it renders to the stack's name and region
    assert isinstance(name, template._Tag)
    assert name.tag == "Sub"
    assert SUB_VARIABLE.sub(lambda found: fake(found.group(1)), name.value) == "fake-stack-xx-fake-1"


# -- every AWS metric names this stack's resources ------------------------------------------


DYNAMODB_DATA_CALLS = {
    "get_item",
    "put_item",
    "update_item",
    "delete_item",
    "query",
    "scan",
    "batch_get_item",
    "batch_write_item",
    "transact_write_items",
    "transact_get_items",
}


def table_operations() -> set[str]:
    """The DynamoDB operations the data-access package sends (``client.put_item(`` is
    PutItem): what a request of the service can be, and be throttled in."""
    calls = set()
    for path in (ROOT / "layers" / "podium" / "podium" / "dal").glob("*.py"):
        calls |= set(re.findall(r"client\.(\w+)\(", path.read_text())) & DYNAMODB_DATA_CALLS
    return {"".join(part.title() for part in call.split("_")) for call in calls}


def test_every_aws_metric_names_a_resource_of_the_template() -> None:
    api = resources()["PodiumApi"]["Properties"]
    route_keys = {(route.method, route.path) for route in routes()}
    tables = of_type("AWS::DynamoDB::Table")
    for row in rows():
        if row.namespace == app_namespace():
            continue
        # Given an AWS metric: its name and dimensions are ones the service publishes
        assert row.name in AWS_METRICS[row.namespace], row
        assert set(row.dimension_map) in AWS_DIMENSIONS[row.namespace], row
        dims = row.dimension_map
        # Then each dimension names something this template makes
        if row.namespace == "AWS/Lambda":
            assert referenced(dims["FunctionName"]) in {(f, "") for f in of_type("AWS::Serverless::Function")}
        elif row.namespace == "AWS/ApiGateway":
            assert dims["ApiName"] == resolve(api["Name"])
            assert dims["Stage"] == resolve(api["StageName"])
            if "Method" in dims:
                assert (dims["Method"], dims["Resource"]) in route_keys, row
        elif row.namespace == "AWS/DynamoDB":
            table, attribute = referenced(dims["TableName"])
            assert (table, attribute) in {(t, "") for t in tables}
            if "GlobalSecondaryIndexName" in dims:
                indexes = resources()[table]["Properties"]["GlobalSecondaryIndexes"]
                assert dims["GlobalSecondaryIndexName"] in {index["IndexName"] for index in indexes}
            if "Operation" in dims:
                assert dims["Operation"] in table_operations(), row
        elif row.namespace == "AWS/SQS":
            queue, attribute = referenced(dims["QueueName"])
            assert (queue, attribute) in {(q, "QueueName") for q in of_type("AWS::SQS::Queue")}
        else:
            raise AssertionError(f"a namespace the dashboard should not read: {row}")


def test_the_alarms_widget_shows_every_alarm_of_the_template() -> None:
    # Given the alarm widgets' ARNs, each a made-up value naming an alarm
    on_dashboard = [
        referenced(arn)
        for widget in dashboard()["widgets"]
        if widget["type"] == "alarm"
        for arn in widget["properties"]["alarms"]
    ]
    # Then they are every alarm of the template, once each
    assert sorted(on_dashboard) == sorted((alarm, "Arn") for alarm in of_type("AWS::CloudWatch::Alarm"))


# -- every metric of the service's namespace is one the code emits --------------------------


def load_event(name: str) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((ROOT / "events" / f"{name}.json").read_text())
    return event


@pytest.fixture
def emitted(
    moto_tables: Settings, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[list[EmfMetric]]:
    """What the functions print to CloudWatch when every one of them runs its sample
    event (events/*.json) in moto, the stream consumers on the records those requests
    wrote, as they would in Lambda."""
    import boto3

    topic = boto3.client("sns", region_name="us-east-1").create_topic(Name="unit-topic")["TopicArn"]
    monkeypatch.setenv("TABLE_NAME", moto_tables.table_name)
    monkeypatch.setenv("STATE_TABLE_NAME", moto_tables.state_table)
    monkeypatch.setenv("NOTIFICATION_TOPIC_ARN", topic)
    podium.wiring.reset()
    spec = template.read("unit-")
    loaded: list[str] = []

    def run(function: str, code_dir: Path, handler: str, event: dict[str, Any]) -> Any:
        name = f"podium_dashboard_test_{code_dir.name}_{uuid.uuid4().hex[:8]}"
        loaded.append(name)
        return load_handler(name, code_dir, handler)(event, LambdaContext(function))

    capsys.readouterr()
    # the board and its members first, so that the other routes find them
    by_dir = {route.code_dir.name: route for route in spec.routes()}
    order = ["create_board", "put_member", *sorted(set(by_dir) - {"create_board", "put_member"})]
    for name in order:
        route = by_dir[name]
        run(route.function, route.code_dir, route.handler, load_event(name))
    # the page's function serves two routes; its sample event is the first, GET /
    page_asset = {**load_event("web"), "resource": "/web/{asset}", "path": "/web/page.css"}
    page_asset["pathParameters"] = {"asset": "page.css"}
    run(by_dir["web"].function, by_dir["web"].code_dir, by_dir["web"].handler, page_asset)
    client = boto3.client("dynamodb", region_name="us-east-1")
    stream = client.describe_table(TableName=moto_tables.table_name)["Table"]["LatestStreamArn"]
    records = StreamTail(boto3.client("dynamodbstreams", region_name="us-east-1"), stream).read()
    for consumer in spec.stream_consumers():
        batch = [r for r in records if any(matches(pattern, r) for pattern in consumer.filters)]
        assert batch, consumer.function
        run(consumer.function, consumer.code_dir, consumer.handler, {"Records": batch})
    for schedule in spec.schedules():
        run(schedule.function, schedule.code_dir, schedule.handler, load_event(schedule.code_dir.name))
    yield emf_metrics(capsys.readouterr().out)
    podium.wiring.reset()
    for name in loaded:
        sys.modules.pop(name, None)


# Functions that publish no metric of their own on a sample event (a read of an empty
# inbox) make Powertools say so; that is expected here, not a finding.
@pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
def test_every_metric_of_the_apps_namespace_is_one_the_code_emits(emitted: list[EmfMetric]) -> None:
    # Given what the functions printed, as CloudWatch files it: (name, dimensions)
    published = {(m.name, m.dimensions) for m in emitted if m.namespace == app_namespace()}
    # When reading the dashboard's rows of that namespace
    shown = [row for row in rows() if row.namespace == app_namespace()]
    assert shown
    # Then each is a metric with exactly the dimensions it is published with
    missing = [row for row in shown if (row.name, frozenset(row.dimensions)) not in published]
    assert missing == []


# -- what an operator must see ---------------------------------------------------------------


def service() -> dict[str, str]:
    """The dimension Powertools adds to the service's own metrics."""
    variables = document()["Globals"]["Function"]["Environment"]["Variables"]
    return {"service": str(variables["POWERTOOLS_SERVICE_NAME"])}


def shown(namespace: str, name: str, **dimensions: str) -> set[str]:
    """The statistics the dashboard draws of a metric with exactly these dimensions."""
    return {
        row.stat
        for row in rows()
        if (row.namespace, row.name, row.dimension_map) == (namespace, name, dimensions)
    }


@pytest.mark.parametrize("route", routes(), ids=lambda r: f"{r.method} {r.path}")
def test_each_route_has_its_requests_latency_errors_and_cost(route: template.Route) -> None:
    # Given a route, served by a function of its own
    function = fake(route.function)
    # Then its requests, its latency's p50 and p99 and its crashes are drawn
    assert "Sum" in shown("AWS/Lambda", "Invocations", FunctionName=function)
    assert {"p50", "p99"} <= shown("AWS/Lambda", "Duration", FunctionName=function)
    assert "Sum" in shown("AWS/Lambda", "Errors", FunctionName=function)
    # and its error answers and the units its requests consumed, under its access pattern
    pattern = {telemetry.ACCESS_PATTERN: f"{route.method} {route.path}", **service()}
    for metric in (
        telemetry.SERVER_ERROR,
        telemetry.CLIENT_ERROR,
        telemetry.CONSUMED_RCU,
        telemetry.CONSUMED_WCU,
    ):
        assert "Sum" in shown(app_namespace(), metric, **pattern), metric


def test_the_api_throttles_streams_queues_and_head_lag_are_shown() -> None:
    # Given the template's API, functions, tables, stream consumers and queues
    # Then the API's requests, errors and latency are drawn
    properties = resources()["PodiumApi"]["Properties"]
    api = {"ApiName": resolve(properties["Name"]), "Stage": resolve(properties["StageName"])}
    for metric in ("Count", "4XXError", "5XXError"):
        assert "Sum" in shown("AWS/ApiGateway", metric, **api)
    assert {"p50", "p99"} <= shown("AWS/ApiGateway", "Latency", **api)
    # and the items a top reads
    top = {telemetry.ACCESS_PATTERN: Route.TOP.value, **service()}
    assert {"p50", "p99"} <= shown(app_namespace(), telemetry.ITEMS_READ, **top)
    # and throttling: every function, the table and each of its indexes, each operation
    for function in of_type("AWS::Serverless::Function"):
        assert "Sum" in shown("AWS/Lambda", "Throttles", FunctionName=fake(function)), function
    for table in of_type("AWS::DynamoDB::Table"):
        indexes = [i["IndexName"] for i in resources()[table]["Properties"].get("GlobalSecondaryIndexes", [])]
        for where in [{}, *({"GlobalSecondaryIndexName": index} for index in indexes)]:
            for metric in ("ReadThrottleEvents", "WriteThrottleEvents"):
                assert "Sum" in shown("AWS/DynamoDB", metric, TableName=fake(table), **where), (metric, where)
        throttled = {
            row.dimension_map["Operation"]
            for row in rows()
            if row.name == "ThrottledRequests" and row.dimension_map["TableName"] == fake(table)
        }
        assert throttled == table_operations()
    # and the streams: each consumer's iterator age, each queue's depth, the head's lag
    for consumer in template.read().stream_consumers():
        assert "Maximum" in shown("AWS/Lambda", "IteratorAge", FunctionName=fake(consumer.function))
    for queue in of_type("AWS::SQS::Queue"):
        visible = shown("AWS/SQS", "ApproximateNumberOfMessagesVisible", QueueName=fake(f"{queue}.QueueName"))
        assert "Maximum" in visible, queue
    assert {"p50", "p99"} <= shown(app_namespace(), telemetry.HEAD_LAG, **service())
