"""Least privilege: each function of ``template.yaml`` is granted exactly the DynamoDB, SNS,
SQS and Secrets Manager actions its code can call, on exactly the resources it touches.

What the code can call is derived statically (``tests/callgraph.py``: from the handler,
through the domain and the ports, down to the boto3 client calls); what runs when the
function's sample event is invoked against moto is recorded and must be part of it, so
the static analysis cannot miss what really runs. docs/security.md ("Least privilege")
says what each function gets.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from devstack import template
from devstack.template import _Tag
from podium.dal.schema import LOG_INDEX
from tests.callgraph import Program
from tests.unit import test_events
from tests.unit.test_events import FUNCTIONS, SCORES, Invoke, load_event

ROOT = Path(__file__).resolve().parents[2]
# The sample events run as tests/unit/test_events.py runs them: on its moto tables.
invoke = test_events.invoke
board = test_events.board
images = test_events.images
TABLE = "LeaderboardTable"
# The code reaches both tables through one data-access layer that routes each item by its
# key (podium.dal.client.Tables.table_for): which item kinds a function touches is not in
# its call graph, so a function may do to the state table what it may do to the streamed
# one (docs/security.md, "Least privilege"). The indexes are the streamed table's alone.
TABLES = (TABLE, "StateTable")
TOPIC = "NotificationTopic"
TRANSACTION_PARTS = {
    "Put": "dynamodb:PutItem",
    "Update": "dynamodb:UpdateItem",
    "Delete": "dynamodb:DeleteItem",
    "ConditionCheck": "dynamodb:ConditionCheckItem",
}
# What SAM's AWSLambdaDynamoDBExecutionRole grants a function with a DynamoDB stream event:
# reading the stream. Not listed in the template again.
STREAM_READ_ACTIONS = {
    "dynamodb:DescribeStream",
    "dynamodb:GetRecords",
    "dynamodb:GetShardIterator",
    "dynamodb:ListStreams",
}
SERVICES = ("dynamodb:", "sns:", "sqs:", "secretsmanager:")
# The cursor key's secret: read by the functions that hand cursors out or take them, whose
# environment names it (podium.cursorkeys). Code that reaches the read in a function without
# it signs with a key of its own process (its cursors never leave it), and reads no secret.
CURSOR_SECRET = "CURSOR_SECRET_ARN"

Grant = tuple[str, str]  # (IAM action, resource: a logical id, or "<table>/index/<name>")


# -- what the code needs --------------------------------------------------------------------------


@cache
def program() -> Program:
    return Program()


def _camel(operation: str) -> str:
    return "".join(part.capitalize() for part in operation.split("_"))


def needed_by_code(code_dir: str, environment: dict[str, Any] | None = None) -> set[Grant]:
    """The grants the function's code path needs, from the static call graph (and its
    ``environment``: which secret it is given, if any)."""
    reached = program().reached_facts(code_dir)
    operations = set().union(*(facts.operations for facts in reached))
    transaction_parts = set().union(*(facts.transaction_actions for facts in reached))
    # the layer's queries name the index of RANK_INDEX_NAME or RANK_INDEX_B_NAME, which the
    # template sets: the one a board's layout reads (a re-shard switches it)
    variables = template.load()["Globals"]["Function"]["Environment"]["Variables"]
    index_names = [variables["RANK_INDEX_NAME"], variables["RANK_INDEX_B_NAME"]]
    grants: set[Grant] = set()
    for operation in operations:
        if operation.service == "sns":
            grants.add((f"sns:{_camel(operation.name)}", TOPIC))
            continue
        if operation.service == "secretsmanager":
            if environment and CURSOR_SECRET in environment:
                secret = _resource(environment[CURSOR_SECRET])
                grants.add((f"secretsmanager:{_camel(operation.name)}", secret))
            continue
        if operation.name == "transact_write_items":
            grants |= {(TRANSACTION_PARTS[part], table) for part in transaction_parts for table in TABLES}
        elif operation.name == "query":
            if any(facts.queries_table for facts in reached):
                grants |= {("dynamodb:Query", table) for table in TABLES}
            if any(facts.queries_index for facts in reached):
                grants |= {("dynamodb:Query", f"{TABLE}/index/{name}") for name in index_names}
            if any(facts.queries_log_index for facts in reached):
                grants.add(("dynamodb:Query", f"{TABLE}/index/{LOG_INDEX}"))
        else:
            grants |= {(f"dynamodb:{_camel(operation.name)}", table) for table in TABLES}
    return grants


def needed_by_events(properties: dict[str, Any]) -> set[Grant]:
    """What the function's event sources need of its role, beyond what SAM adds: a stream
    consumer's on-failure destination gets the records that failed every retry."""
    grants: set[Grant] = set()
    for event in properties.get("Events", {}).values():
        destination = event.get("Properties", {}).get("DestinationConfig", {}).get("OnFailure", {})
        if "Destination" in destination:
            assert "Type" not in destination, "SAM would add its own SendMessage* policy"
            grants.add(("sqs:SendMessage", _resource(destination["Destination"])))
    return grants


# -- what the template grants ---------------------------------------------------------------------


@cache
def _policy_templates() -> dict[str, Any]:
    import samtranslator  # type: ignore[import-untyped]

    path = Path(samtranslator.__file__).parent / "policy_templates_data" / "policy_templates.json"
    templates: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["Templates"]
    return templates


def _indexes(table: str) -> list[str]:
    properties = template.load()["Resources"][table]["Properties"]
    return [index["IndexName"] for index in properties.get("GlobalSecondaryIndexes", [])]


def _resource(value: Any, parameters: dict[str, str] | None = None) -> str:
    """The logical id (or ``<table>/index/<name>``) an ARN in the template names."""
    if isinstance(value, _Tag):
        if value.tag == "GetAtt":
            return str(value.value).split(".")[0]
        if value.tag == "Ref":
            return str(value.value)
        if value.tag == "Sub" and isinstance(value.value, str):
            text = value.value
            for name in template.load()["Resources"]:
                text = text.replace(f"${{{name}.Arn}}", name)
            return text
    if isinstance(value, dict) and "Fn::Sub" in value:  # a SAM policy template's resource
        pattern = value["Fn::Sub"][0]
        tail = str(pattern).split(":")[-1]  # table/${tableName}[/index/*], ${topicName}, ${queueName}
        for name, logical_id in (parameters or {}).items():
            tail = tail.replace(f"${{{name}}}", logical_id)
        return tail.removeprefix("table/")
    raise AssertionError(f"a resource the test cannot read: {value!r}")


def _expand(action: str, resource: str) -> set[Grant]:
    if resource.endswith("/index/*"):
        table = resource.removesuffix("/index/*")
        return {(action, f"{table}/index/{index}") for index in _indexes(table)}
    return {(action, resource)}


def granted(properties: dict[str, Any]) -> set[Grant]:
    """The DynamoDB, SNS and SQS grants of a function's ``Policies``."""
    grants: set[Grant] = set()
    for policy in properties.get("Policies", []):
        assert isinstance(policy, dict), f"a managed policy by name grants what the test cannot see: {policy}"
        for name, value in policy.items():
            if name == "Statement":
                statements = value
                parameters: dict[str, str] = {}
            else:
                definition = _policy_templates()[name]
                statements = definition["Definition"]["Statement"]
                parameters = {
                    parameter: _resource(value[parameter]) for parameter in definition.get("Parameters", {})
                }
                parameters = {p.lower()[0] + p[1:]: v for p, v in parameters.items()}
            for statement in statements:
                assert statement["Effect"] == "Allow"
                actions = (
                    statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]]
                )
                resources = (
                    statement["Resource"]
                    if isinstance(statement["Resource"], list)
                    else [statement["Resource"]]
                )
                for action in actions:
                    assert "*" not in action, f"a wildcard action grants more than is called: {action}"
                    for resource in resources:
                        grants |= _expand(action, _resource(resource, parameters))
    return {grant for grant in grants if grant[0].startswith(SERVICES)}


def template_functions() -> dict[str, dict[str, Any]]:
    resources = template.load()["Resources"]
    return {
        logical_id: resource["Properties"]
        for logical_id, resource in resources.items()
        if resource["Type"] == "AWS::Serverless::Function"
    }


def code_dir(properties: dict[str, Any]) -> str:
    return Path(properties["CodeUri"]).name


def environment_of(properties: dict[str, Any]) -> dict[str, Any]:
    """The function's own variables over the Globals' (as Lambda gets them)."""
    variables = dict(template.load()["Globals"]["Function"]["Environment"]["Variables"])
    variables.update(properties.get("Environment", {}).get("Variables", {}))
    return variables


FUNCTION_IDS = sorted(template_functions())


# -- static: the template grants what the code needs --------------------------------------------------


@pytest.mark.parametrize("logical_id", FUNCTION_IDS)
def test_function_is_granted_exactly_what_its_code_calls(logical_id: str) -> None:
    # Given the function's code path and event sources
    properties = template_functions()[logical_id]
    needed = needed_by_code(code_dir(properties), environment_of(properties)) | needed_by_events(properties)

    # When reading what its Policies grant
    grants = granted(properties)

    # Then they are the same, resource by resource: nothing missing, nothing more
    assert sorted(grants - needed) == [], f"{logical_id} is granted more than its code calls"
    assert sorted(needed - grants) == [], f"{logical_id} calls what it is not granted"


def test_every_function_in_the_template_is_analysed() -> None:
    # Given the functions of the template and those the sample events name
    from_template = {code_dir(properties) for properties in template_functions().values()}

    # Then every one of them has a handler the analysis starts from, and the authorizer is one
    assert from_template == set(FUNCTIONS)
    assert "authorizer" in from_template
    for name in from_template:
        assert f"functions.{name}.app" in program().modules


def test_every_table_of_the_template_is_one_a_function_uses() -> None:
    # Given the DynamoDB tables the template declares
    resources = template.load()["Resources"]
    tables = {logical_id for logical_id, r in resources.items() if r["Type"] == "AWS::DynamoDB::Table"}

    # When collecting the tables (and their indexes) the functions' code reads or writes
    used = {resource.split("/")[0] for name in FUNCTIONS for _, resource in needed_by_code(name)}

    # Then none is declared for nothing: a table no code touches is dead weight on every
    # deploy (as the Powertools idempotency table was once its records moved)
    assert sorted(tables - used) == []


@pytest.mark.parametrize(
    ("logical_id", "code"), [("AuthorizerFunction", "authorizer"), ("WebFunction", "web")]
)
def test_the_authorizer_and_the_page_touch_no_table(logical_id: str, code: str) -> None:
    properties = template_functions()[logical_id]
    assert needed_by_code(code) == set()
    assert granted(properties) == set()
    assert "Policies" not in properties


def test_stream_consumers_read_their_stream_through_what_sam_adds() -> None:
    # Given SAM's DynamoDB event source, and the template's stream consumers
    from samtranslator.model.eventsources.pull import DynamoDB  # type: ignore[import-untyped]

    consumers = template.read("unit-").stream_consumers()
    assert consumers

    # Then SAM attaches AWSLambdaDynamoDBExecutionRole (the stream read actions) to each,
    # so the template lists none of them itself
    assert DynamoDB("Stream").get_policy_arn() is not None
    assert str(DynamoDB("Stream").get_policy_arn()).endswith("service-role/AWSLambdaDynamoDBExecutionRole")
    for consumer in consumers:
        listed = {action for action, _ in granted(template_functions()[consumer.function])}
        assert not listed & STREAM_READ_ACTIONS


def test_only_the_notifier_and_the_period_results_publish_and_only_stream_consumers_send_to_the_queue() -> (
    None
):
    publishers = ("NotifierFunction", "PeriodResultsFunction")
    for logical_id, properties in template_functions().items():
        grants = granted(properties)
        publishes = any(action.startswith("sns:") for action, _ in grants)
        sends = any(action.startswith("sqs:") for action, _ in grants)
        assert publishes == (logical_id in publishers), logical_id
        is_consumer = any(e["Type"] == "DynamoDB" for e in properties.get("Events", {}).values())
        assert sends == is_consumer, logical_id


def _routes_taking_a_cursor() -> set[tuple[str, str]]:
    """The API's operations (path, METHOD) that take a ``cursor`` (docs/openapi.yaml): the
    ones that hand a nextCursor out and read it back."""
    import yaml

    document = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text(encoding="utf-8"))
    found = set()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            parameters = operation.get("parameters", []) if isinstance(operation, dict) else []
            if any(p.get("$ref", "").endswith("/Cursor") or p.get("name") == "cursor" for p in parameters):
                found.add((path, method.upper()))
    return found


def test_only_the_functions_whose_routes_take_cursors_may_read_the_cursor_key_and_only_it() -> None:
    # Given the routes that take a cursor, and the functions that serve them
    routes = _routes_taking_a_cursor()
    assert len(routes) >= 5
    serving = {
        logical_id
        for logical_id, properties in template_functions().items()
        for event in properties.get("Events", {}).values()
        if event["Type"] == "Api" and (event["Properties"]["Path"], event["Properties"]["Method"]) in routes
    }

    # When reading which functions the template gives the cursor secret, and what they may do with it
    variables = template.load()["Globals"]["Function"]["Environment"]["Variables"]
    functions = template_functions()
    given = {logical_id for logical_id, p in functions.items() if CURSOR_SECRET in environment_of(p)}
    secret_grants = {
        logical_id: {grant for grant in granted(p) if grant[0].startswith("secretsmanager:")}
        for logical_id, p in template_functions().items()
    }

    # Then no function has the key in its environment, those that serve cursors have the
    # secret's ARN, and each of them may read that one secret, and nothing else may
    assert "CURSOR_KEY" not in variables
    assert CURSOR_SECRET not in variables
    assert given == serving
    for logical_id, grants in secret_grants.items():
        expected = {("secretsmanager:GetSecretValue", "CursorKey")} if logical_id in serving else set()
        assert grants == expected, logical_id


# -- dynamic: what really runs is part of what the analysis found ---------------------------------------


Recorded = set[Grant]


def _sample_event(name: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The function's sample event, and what it needs around it (the notifier's topic)."""
    event = load_event(name)
    if name in ("notifier", "period_results"):
        import boto3

        topic = boto3.client("sns", region_name="us-east-1").create_topic(Name="unit-NotificationTopic")
        monkeypatch.setenv("NOTIFICATION_TOPIC_ARN", topic["TopicArn"])
    if name == "notifier":
        event["Records"][0]["dynamodb"]["NewImage"]["t"]["N"] = str(int(time.time() * 1_000_000))
    if name == "take_snapshots":
        monkeypatch.setenv("SNAPSHOT_RETENTION_DAYS", "36500")
    if CURSOR_SECRET in environment_of(_properties_of(name)):
        import boto3

        client = boto3.client("secretsmanager", region_name="us-east-1")
        arn = client.create_secret(Name=SECRET_NAME, SecretString='{"currentId": "1", "current": "k"}')["ARN"]
        monkeypatch.setenv(CURSOR_SECRET, arn)
    return event


SECRET_NAME = "unit-CursorKey"


def _properties_of(name: str) -> dict[str, Any]:
    return next(p for p in template_functions().values() if code_dir(p) == name)


# (the authorizer and the page call no AWS service: nothing to record)
DYNAMIC = sorted(name for name in FUNCTIONS if name not in ("authorizer", "web"))


@pytest.mark.parametrize("name", DYNAMIC)
def test_what_the_sample_event_calls_is_what_the_analysis_found(
    name: str, invoke: Invoke, images: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a board with members, and the notifier's follower
    assert SCORES
    import podium.wiring

    rivals = load_event("put_rivals")
    rivals["path"] = rivals["path"].replace("img-001.jpg", "img-004.jpg")
    rivals["pathParameters"] = {"boardId": "images", "memberId": "img-004.jpg"}
    rivals["body"] = json.dumps({"memberIds": ["img-001.jpg"]})
    assert invoke("put_rivals", rivals)["statusCode"] == 200
    event = _sample_event(name, monkeypatch)
    podium.wiring.reset()

    # When the function's sample event runs, its AWS calls recorded
    with _recording() as recorded:
        invoke(name, event)

    # Then each call is one the static analysis found for the function
    assert recorded, f"{name} made no AWS call: the scenario does not exercise it"
    assert sorted(recorded - needed_by_code(name, environment_of(_properties_of(name)))) == []


def test_a_page_with_a_next_cursor_reads_the_cursor_key_once_as_the_analysis_found(
    invoke: Invoke, images: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the top function with the cursor secret, and a board longer than a page
    import podium.wiring

    event = _sample_event("top", monkeypatch)
    podium.wiring.reset()

    # When two pages are read with cursors
    with _recording() as recorded:
        first = json.loads(invoke("top", event)["body"])
        event["queryStringParameters"] = {"limit": "1", "cursor": first["nextCursor"]}
        assert invoke("top", event)["statusCode"] == 200

    # Then the secret was read, as the analysis found and the template grants
    read = ("secretsmanager:GetSecretValue", "CursorKey")
    assert first["nextCursor"]
    assert read in recorded
    assert read in needed_by_code("top", environment_of(_properties_of("top")))


@contextmanager
def _recording() -> Iterator[Recorded]:
    """Record the AWS calls made inside the block: every boto3 client's requests go through
    ``BaseClient._make_api_call``, whichever session made the client."""
    from botocore.client import BaseClient

    calls: list[tuple[str, str, dict[str, Any]]] = []
    original = BaseClient._make_api_call  # type: ignore[attr-defined]

    def recording(client: BaseClient, operation: str, params: dict[str, Any]) -> Any:
        calls.append((client.meta.service_model.service_name, operation, params))
        return original(client, operation, params)

    grants: Recorded = set()
    BaseClient._make_api_call = recording  # type: ignore[attr-defined]
    try:
        yield grants
    finally:
        BaseClient._make_api_call = original  # type: ignore[attr-defined]
    grants |= grants_of(calls)


def grants_of(calls: list[tuple[str, str, dict[str, Any]]]) -> Recorded:
    """The grants a list of recorded client calls needs."""
    names = template.read("unit-").table_names
    logical = {physical: logical_id for logical_id, physical in names.items()}
    grants: Recorded = set()
    for service, operation, params in calls:
        if service == "sns":
            grants.add((f"sns:{operation}", TOPIC))
        elif service == "secretsmanager":
            named = SECRET_NAME in str(params.get("SecretId", ""))
            grants.add((f"secretsmanager:{operation}", "CursorKey" if named else "?"))
        elif service == "dynamodb":
            if operation == "TransactWriteItems":
                for item in params["TransactItems"]:
                    [(part, request)] = item.items()
                    grants.add((TRANSACTION_PARTS[part], logical[request["TableName"]]))
            elif operation in ("BatchGetItem", "BatchWriteItem"):
                grants |= {(f"dynamodb:{operation}", logical[name]) for name in params["RequestItems"]}
            elif "IndexName" in params:
                index = f"{logical[params['TableName']]}/index/{params['IndexName']}"
                grants.add((f"dynamodb:{operation}", index))
            else:
                grants.add((f"dynamodb:{operation}", logical[params["TableName"]]))
        else:
            grants.add((f"{service}:{operation}", "?"))
    return grants
