"""The sample events in ``events/``, each run through its function's handler the way
``sam local invoke <Function> -e events/<file>.json`` would, against the template's
tables in moto."""

from __future__ import annotations

import json
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

import podium.wiring
from devstack import template
from devstack.functions import Handler, LambdaContext, load_handler
from devstack.streams import matches
from podium.config import Settings
from tests.helpers import BOARD_FIELDS, IMAGE_VIEWS, MEMBER_FIELDS

ROOT = Path(__file__).resolve().parents[2]
EVENTS_DIR = ROOT / "events"
BOARD_ID = "images"
SCORES = IMAGE_VIEWS  # the image example of the references, owned by ana
DATA = {"owner": "ana"}

Invoke = Callable[..., Any]


@dataclass(frozen=True)
class TemplateFunction:
    """A function of ``template.yaml``, named by its code directory (and its event file)."""

    logical_id: str
    code_dir: Path
    handler: str
    route: template.Route | None = None


def _template_functions() -> dict[str, TemplateFunction]:
    spec = template.read("unit-")
    functions = {
        route.code_dir.name: TemplateFunction(route.function, route.code_dir, route.handler, route)
        for route in spec.routes()
    }
    for consumer in spec.stream_consumers():
        functions[consumer.code_dir.name] = TemplateFunction(
            consumer.function, consumer.code_dir, consumer.handler
        )
    for schedule in spec.schedules():
        functions[schedule.code_dir.name] = TemplateFunction(
            schedule.function, schedule.code_dir, schedule.handler
        )
    for authorizer in spec.authorizers().values():
        functions[authorizer.code_dir.name] = TemplateFunction(
            authorizer.function, authorizer.code_dir, authorizer.handler
        )
    return functions


FUNCTIONS = _template_functions()
API_EVENTS = sorted(name for name, function in FUNCTIONS.items() if function.route is not None)


def load_event(name: str) -> dict[str, Any]:
    """``events/<name>.json``, as ``sam local invoke -e`` reads it."""
    with open(EVENTS_DIR / f"{name}.json", encoding="utf-8") as handle:
        event: dict[str, Any] = json.load(handle)
    return event


def decimal_body(response: dict[str, Any]) -> Any:
    """A handler response's body with every number read as an exact Decimal."""
    return json.loads(response["body"], parse_float=Decimal, parse_int=Decimal)


def content_type(response: dict[str, Any]) -> str | None:
    headers = {k.lower(): v for k, v in (response.get("headers") or {}).items()}
    for name, values in (response.get("multiValueHeaders") or {}).items():
        headers[name.lower()] = ",".join(values)
    return headers.get("content-type")


def entries(body: dict[str, Any]) -> list[tuple[int, str, Decimal]]:
    """(rank, memberId, score) of each entry of a listing."""
    return [(int(entry["rank"]), entry["memberId"], entry["score"]) for entry in body["entries"]]


def put_member_event(member_id: str, score: int) -> dict[str, Any]:
    """The put_member sample event, pointed at another member with its own score."""
    event = load_event("put_member")
    path = f"/boards/{BOARD_ID}/members/{member_id}"
    event["path"] = path
    event["requestContext"]["path"] = f"/dev{path}"
    event["pathParameters"] = {"boardId": BOARD_ID, "memberId": member_id}
    event["body"] = json.dumps({"data": DATA, "score": score})
    return event


def _clear_singletons() -> None:
    podium.wiring.reset()


@pytest.fixture
def invoke(moto_tables: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Invoke]:
    """Invoke a function by its event name, with its sample event unless one is given."""
    monkeypatch.setenv("TABLE_NAME", moto_tables.table_name)
    monkeypatch.setenv("STATE_TABLE_NAME", moto_tables.state_table)
    _clear_singletons()
    handlers: dict[str, Handler] = {}
    module_names: list[str] = []

    def run(name: str, event: dict[str, Any] | None = None) -> Any:
        function = FUNCTIONS[name]
        if name not in handlers:
            module_name = f"podium_event_test_{name}_{uuid.uuid4().hex[:8]}"
            module_names.append(module_name)
            handlers[name] = load_handler(module_name, function.code_dir, function.handler)
        return handlers[name](
            event if event is not None else load_event(name), LambdaContext(function.logical_id)
        )

    yield run
    _clear_singletons()
    for module_name in module_names:
        sys.modules.pop(module_name, None)


@pytest.fixture
def board(invoke: Invoke) -> None:
    response = invoke("create_board")
    assert response["statusCode"] == 201, response["body"]


@pytest.fixture
def images(invoke: Invoke, board: None) -> None:
    for member_id, score in SCORES.items():
        response = invoke("put_member", put_member_event(member_id, score))
        assert response["statusCode"] == 201, response["body"]


# -- the event files themselves -----------------------------------------------------------


def test_every_template_function_has_exactly_one_event_file() -> None:
    # Given the functions of template.yaml, named by their code directory
    function_dirs = set(FUNCTIONS)

    # When listing the sample events
    event_files = {path.stem for path in EVENTS_DIR.glob("*.json")}

    # Then each function has its event, and there is no event for a function that is gone
    assert event_files == function_dirs
    assert function_dirs == {path.name for path in (ROOT / "functions").iterdir() if path.is_dir()}


@pytest.mark.parametrize("name", API_EVENTS)
def test_api_event_is_a_rest_proxy_event_for_its_route(name: str) -> None:
    # Given the function's route in the template
    route = FUNCTIONS[name].route
    assert route is not None

    # When reading its sample event
    event = load_event(name)

    # Then API Gateway would have built it for that route on the dev stage
    assert event["resource"] == route.path
    assert event["httpMethod"] == route.method
    found = route.pattern.match(event["path"])
    assert found is not None
    assert (event["pathParameters"] or {}) == found.groupdict()
    context = event["requestContext"]
    assert context["resourcePath"] == route.path
    assert context["httpMethod"] == route.method
    assert context["path"] == f"/dev{event['path']}"
    assert context["stage"] == "dev"
    assert context["requestId"]
    assert context["identity"]["sourceIp"]
    assert event["isBase64Encoded"] is False
    assert {k: [v] for k, v in (event["headers"] or {}).items()} == (event["multiValueHeaders"] or {})
    query = event["queryStringParameters"] or {}
    assert {k: [v] for k, v in query.items()} == (event["multiValueQueryStringParameters"] or {})
    if event["body"] is not None:
        assert isinstance(json.loads(event["body"]), dict)
    # behind the edge authorizer, the event carries what it answered (an admin's token here);
    # a route without one (publicRead reads) gets no authorizer context from API Gateway
    if route.authorizer:
        assert context["authorizer"]["role"] == "admin"
    else:
        assert "authorizer" not in context


def test_the_authorizer_refuses_the_sample_token_it_cannot_verify(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given the authorizer's sample event, whose token is signed by no key its issuer
    # publishes (an issuer that cannot be reached is another matter: tests/unit/test_key_set.py)
    from devstack.issuer import LocalIssuer
    from podium import jwks

    monkeypatch.setenv("AUTH_ISSUER", "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_sample")
    monkeypatch.setenv("AUTH_AUDIENCE", "sample-client")
    monkeypatch.setenv("AUTH_JWKS_URL", "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_sample/jwks")
    monkeypatch.setattr(jwks, "fetch_json", lambda url: LocalIssuer("http://127.0.0.1:9").jwks())
    _clear_singletons()
    function = FUNCTIONS["authorizer"]
    handler = load_handler(
        f"podium_event_test_authorizer_{uuid.uuid4().hex[:8]}", function.code_dir, function.handler
    )

    # When API Gateway invokes the authorizer with it
    # Then it raises "Unauthorized", which API Gateway answers with 401
    with pytest.raises(Exception, match=r"^Unauthorized$"):
        handler(load_event("authorizer"), LambdaContext(function.logical_id))
    _clear_singletons()


def test_stream_events_pass_their_consumers_filters() -> None:
    # Given the stream filters of the template
    spec = template.read("unit-")
    for consumer in spec.stream_consumers():
        # When reading the consumer's sample event
        records = load_event(consumer.code_dir.name)["Records"]

        # Then every record passes the event source mapping's filter
        for record in records:
            assert any(matches(pattern, record) for pattern in consumer.filters), record
            assert record["eventSource"] == "aws:dynamodb"
            assert record["dynamodb"]["StreamViewType"] == "NEW_AND_OLD_IMAGES"
            assert re.fullmatch(
                r"arn:aws:dynamodb:[\w-]+:\d{12}:table/.+/stream/.+", record["eventSourceARN"]
            )


# -- boards ---------------------------------------------------------------------------------


def test_create_board_creates_then_confirms(invoke: Invoke) -> None:
    # Given no board yet

    # When the create_board event is invoked twice
    first = invoke("create_board")
    second = invoke("create_board")

    # Then the first creates the board and the repeat confirms it, with the same settings
    assert first["statusCode"] == 201, first["body"]
    assert second["statusCode"] == 200, second["body"]
    assert content_type(first) == "application/json"
    created = decimal_body(first)
    assert set(created) == BOARD_FIELDS
    assert created["boardId"] == BOARD_ID
    assert created["shards"] == 3
    assert created["title"] == "Most viewed images"
    assert (created["order"], created["operator"], created["tieBreak"]) == ("desc", "increment", "shared")
    assert created["memberCount"] == 0
    assert decimal_body(second) == created


def test_get_board(invoke: Invoke, board: None) -> None:
    # Given the images board

    # When the get_board event is invoked
    response = invoke("get_board")

    # Then the board comes back
    assert response["statusCode"] == 200, response["body"]
    body = decimal_body(response)
    assert set(body) == BOARD_FIELDS
    assert body["boardId"] == BOARD_ID
    assert body["shards"] == 3
    assert body["title"] == "Most viewed images"


def test_list_boards(invoke: Invoke, board: None) -> None:
    # Given the images board

    # When the list_boards event is invoked
    response = invoke("list_boards")

    # Then the list holds it, and there is no further page
    assert response["statusCode"] == 200, response["body"]
    body = decimal_body(response)
    assert set(body) == {"boards", "nextCursor"}
    assert [listed["boardId"] for listed in body["boards"]] == [BOARD_ID]
    assert set(body["boards"][0]) == BOARD_FIELDS
    assert body["nextCursor"] is None


# -- members --------------------------------------------------------------------------------


def test_put_member_creates_then_replaces(invoke: Invoke, board: None) -> None:
    # Given the images board without members

    # When the put_member event is invoked twice
    first = invoke("put_member")
    second = invoke("put_member")

    # Then the member is created, then confirmed with the same data and score
    assert first["statusCode"] == 201, first["body"]
    assert second["statusCode"] == 200, second["body"]
    for response in (first, second):
        body = decimal_body(response)
        assert set(body) == MEMBER_FIELDS
        assert body["boardId"] == BOARD_ID
        assert body["memberId"] == "img-001.jpg"
        assert body["score"] == Decimal(27)
        assert body["data"] == DATA


def test_get_member(invoke: Invoke, images: None) -> None:
    # Given the six images

    # When the get_member event is invoked
    response = invoke("get_member")

    # Then the member comes back with its score and data
    assert response["statusCode"] == 200, response["body"]
    body = decimal_body(response)
    assert set(body) == MEMBER_FIELDS
    assert (body["boardId"], body["memberId"]) == (BOARD_ID, "img-001.jpg")
    assert body["score"] == Decimal(SCORES["img-001.jpg"])
    assert body["data"] == DATA
    assert body["hidden"] is False


def test_delete_member(invoke: Invoke, images: None) -> None:
    # Given the six images

    # When the delete_member event is invoked, and then again (a retry)
    first = invoke("delete_member")
    retry = invoke("delete_member")

    # Then both answer 204 with no body, and the member is gone
    assert first["statusCode"] == 204, first["body"]
    assert retry["statusCode"] == 204, retry["body"]
    assert not first["body"]
    gone = invoke("get_member")
    assert gone["statusCode"] == 404, gone["body"]
    assert decimal_body(gone)["code"] == "NotFound"


def test_submit_score_adds_the_value_exactly_once(invoke: Invoke, images: None) -> None:
    # Given img-001.jpg with its score
    previous = decimal_body(invoke("get_member"))["score"]

    # When the submit_score event is invoked, and then retried with the same Idempotency-Key
    response = invoke("submit_score")
    retry = invoke("submit_score")

    # Then the increment is applied once, exactly, and the retry gets the first answer again
    assert response["statusCode"] == 200, response["body"]
    body = decimal_body(response)
    assert body == {
        "memberId": "img-001.jpg",
        "score": previous + Decimal("11.2"),
        "previousScore": previous,
    }
    assert body["score"] == Decimal("38.2")
    assert retry["statusCode"] == 200, retry["body"]
    assert decimal_body(retry) == body
    assert decimal_body(invoke("get_member"))["score"] == Decimal("38.2")


# -- rankings -------------------------------------------------------------------------------


def test_top(invoke: Invoke, images: None) -> None:
    # Given the six images

    # When the top event (limit=3) is invoked
    response = invoke("top")

    # Then the three most viewed come back, best first, with a cursor to the rest
    assert response["statusCode"] == 200, response["body"]
    body = decimal_body(response)
    assert set(body) == {"boardId", "entries", "total", "nextCursor"}
    assert body["boardId"] == BOARD_ID
    assert entries(body) == [
        (1, "img-006.jpg", Decimal(94)),
        (2, "img-004.jpg", Decimal(83)),
        (3, "img-005.jpg", Decimal(52)),
    ]
    assert isinstance(body["nextCursor"], str)
    # total is the board's memberCount, which the change stream keeps: no stream runs here.
    assert body["total"] >= 0


def test_scores(invoke: Invoke, images: None) -> None:
    # Given the six images

    # When the scores event (min=25, max=60) is invoked
    response = invoke("scores")

    # Then the images viewed 25 to 60 times come back, best first, with board-wide ranks
    assert response["statusCode"] == 200, response["body"]
    body = decimal_body(response)
    assert set(body) == {"boardId", "entries", "total", "nextCursor"}
    assert body["boardId"] == BOARD_ID
    assert entries(body) == [(3, "img-005.jpg", Decimal(52)), (4, "img-001.jpg", Decimal(27))]
    assert body["nextCursor"] is None


def test_rank(invoke: Invoke, images: None) -> None:
    # Given the six images

    # When the rank event is invoked for img-001.jpg
    response = invoke("rank")

    # Then three images are better
    assert response["statusCode"] == 200, response["body"]
    body = decimal_body(response)
    assert set(body) == {"memberId", "score", "rank", "total", "topPercent"}
    assert (body["memberId"], body["score"], body["rank"]) == ("img-001.jpg", Decimal(27), 4)


def test_around(invoke: Invoke, images: None) -> None:
    # Given the six images

    # When the around event (radius=1) is invoked for img-005.jpg
    response = invoke("around")

    # Then the window holds its neighbours on each side
    assert response["statusCode"] == 200, response["body"]
    body = decimal_body(response)
    assert set(body) == {"boardId", "entries", "total"}
    assert body["boardId"] == BOARD_ID
    assert entries(body) == [
        (2, "img-004.jpg", Decimal(83)),
        (3, "img-005.jpg", Decimal(52)),
        (4, "img-001.jpg", Decimal(27)),
    ]


def test_ranks(invoke: Invoke, images: None) -> None:
    # Given the six images

    # When the ranks event is invoked for img-001.jpg and img-006.jpg
    response = invoke("ranks")

    # Then both come back in listing order with their board-wide ranks
    assert response["statusCode"] == 200, response["body"]
    body = decimal_body(response)
    assert set(body) == {"entries"}
    assert entries(body) == [(1, "img-006.jpg", Decimal(94)), (4, "img-001.jpg", Decimal(27))]


# -- snapshots ------------------------------------------------------------------------------


def test_scheduled_events_are_what_eventbridge_sends() -> None:
    # Given the schedules of the template
    schedules = template.read("unit-").schedules()
    assert schedules

    for schedule in schedules:
        # When reading the function's sample event
        event = load_event(schedule.code_dir.name)

        # Then it is an EventBridge scheduled event, with its time in whole seconds
        assert (event["version"], event["detail-type"], event["source"]) == (
            "0",
            "Scheduled Event",
            "aws.events",
        )
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", event["time"])
        assert re.fullmatch(r"arn:aws:events:[\w-]+:\d{12}:rule/.+", event["resources"][0])
        assert event["detail"] == {}


def _with_query(name: str, query: dict[str, str], board_id: str = BOARD_ID) -> dict[str, Any]:
    """A sample API event with other query parameters, or for another board."""
    event = load_event(name)
    event["queryStringParameters"] = query or None
    event["multiValueQueryStringParameters"] = {k: [v] for k, v in query.items()} or None
    event["path"] = event["path"].replace(f"/boards/{BOARD_ID}/", f"/boards/{board_id}/")
    event["requestContext"]["path"] = f"/dev{event['path']}"
    event["pathParameters"] = {**event["pathParameters"], "boardId": board_id}
    return event


def test_take_snapshots_records_each_board_once_per_scheduled_time(
    invoke: Invoke, images: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the six images, and a retention that keeps the sample's time readable for good
    monkeypatch.setenv("SNAPSHOT_RETENTION_DAYS", "36500")
    top = decimal_body(invoke("top", _with_query("top", {"limit": "100"})))

    # When the scheduled event is invoked, and then again (Lambda's retry of the same event)
    first = invoke("take_snapshots")
    retry = invoke("take_snapshots")

    # Then the first run records the board, and the retry writes nothing new
    taken = "2026-11-22T10:05:00.000000+00:00"
    assert first == {"takenAt": taken, "written": 1, "existing": 0, "failed": []}
    assert retry == {"takenAt": taken, "written": 0, "existing": 1, "failed": []}

    # And list_snapshots shows one snapshot: the top 100 at the schedule's time
    response = invoke("list_snapshots")
    assert response["statusCode"] == 200, response["body"]
    assert content_type(response) == "application/json"
    body = decimal_body(response)
    assert set(body) == {"snapshots", "nextCursor"}
    [snapshot] = body["snapshots"]
    assert set(snapshot) == {"snapshotId", "takenAt", "memberCount", "entries"}
    assert snapshot["takenAt"] == "2026-11-22T10:05:00Z"
    assert snapshot["entries"] == top["entries"]
    assert len(snapshot["entries"]) == len(SCORES)
    assert snapshot["memberCount"] == decimal_body(invoke("get_board"))["memberCount"]
    assert body["nextCursor"] is None


def test_list_snapshots_names_the_bad_parameter_and_the_missing_board(invoke: Invoke, board: None) -> None:
    # A board without snapshots lists none
    assert decimal_body(invoke("list_snapshots")) == {"snapshots": [], "nextCursor": None}

    # limit 0 or 101, and a cursor that is not one, are 400s naming the parameter
    for query, name in (({"limit": "0"}, "limit"), ({"limit": "101"}, "limit"), ({"cursor": "x"}, "cursor")):
        response = invoke("list_snapshots", _with_query("list_snapshots", query))
        assert response["statusCode"] == 400, response["body"]
        error = decimal_body(response)
        assert error["code"] == "ValidationError"
        assert name in error["message"]

    # A board that does not exist is a 404, to a caller with a token (the sample event has
    # none: this route serves a publicRead board to anyone, and an anonymous caller is told
    # 401 about a board that is not, or is not there)
    anonymous = invoke("list_snapshots", _with_query("list_snapshots", {}, board_id="no-such-board"))
    assert anonymous["statusCode"] == 401, anonymous["body"]
    as_admin = _with_query("list_snapshots", {}, board_id="no-such-board")
    as_admin["requestContext"]["authorizer"] = load_event("get_member")["requestContext"]["authorizer"]
    missing = invoke("list_snapshots", as_admin)
    assert missing["statusCode"] == 404, missing["body"]
    assert decimal_body(missing)["code"] == "NotFound"


# -- the stream consumer --------------------------------------------------------------------


def test_aggregator_counts_a_record_once(invoke: Invoke, board: None) -> None:
    # Given the images board, with no members counted
    before = decimal_body(invoke("get_board"))["memberCount"]

    # When the stream event is delivered, and then delivered again
    first = invoke("aggregator")
    after_first = decimal_body(invoke("get_board"))["memberCount"]
    again = invoke("aggregator")
    after_again = decimal_body(invoke("get_board"))["memberCount"]

    # Then the new member is counted once, and no record is reported as failed
    assert first == {"batchItemFailures": []}
    assert again == {"batchItemFailures": []}
    assert after_first == before + 1
    assert after_again == after_first


# -- rivals, the inbox and the notifier -----------------------------------------------------


def test_rivals_are_replaced_and_read_back(invoke: Invoke, images: None) -> None:
    # When img-001.jpg follows two rivals, with the sample event
    response = invoke("put_rivals")

    # Then the list comes back in the order given, and GET returns the same
    assert response["statusCode"] == 200, response["body"]
    assert decimal_body(response) == {"memberIds": ["img-006.jpg", "img-004.jpg"]}
    assert decimal_body(invoke("get_rivals")) == {"memberIds": ["img-006.jpg", "img-004.jpg"]}


def test_notifications_of_a_quiet_member_are_empty(invoke: Invoke, images: None) -> None:
    response = invoke("notifications")
    assert response["statusCode"] == 200, response["body"]
    assert decimal_body(response) == {"notifications": [], "nextCursor": None}


def test_notifier_tells_a_follower_it_was_overtaken_once(
    invoke: Invoke, images: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given img-004.jpg (83) follows img-001.jpg, and an SNS topic to publish to
    import boto3

    sns = boto3.client("sns", region_name="us-east-1")
    topic = sns.create_topic(Name="unit-NotificationTopic")["TopicArn"]
    monkeypatch.setenv("NOTIFICATION_TOPIC_ARN", topic)
    _clear_singletons()
    rivals_event = load_event("put_rivals")
    rivals_event["path"] = rivals_event["path"].replace("img-001.jpg", "img-004.jpg")
    rivals_event["pathParameters"] = {"boardId": "images", "memberId": "img-004.jpg"}
    rivals_event["body"] = json.dumps({"memberIds": ["img-001.jpg"]})
    assert invoke("put_rivals", rivals_event)["statusCode"] == 200

    # When the sample record (img-001.jpg from 27 to 95), made to happen now (after the
    # follow began: a change is judged by who followed whom at its moment), is delivered twice
    record = load_event("notifier")
    image = record["Records"][0]["dynamodb"]["NewImage"]
    image["t"]["N"] = str(int(time.time() * 1_000_000))
    first = invoke("notifier", record)
    again = invoke("notifier", record)

    # Then img-004.jpg has exactly one overtaken notification
    assert first == {"batchItemFailures": []}
    assert again == {"batchItemFailures": []}
    inbox_event = load_event("notifications")
    inbox_event["path"] = inbox_event["path"].replace("img-001.jpg", "img-004.jpg")
    inbox_event["pathParameters"] = {"boardId": "images", "memberId": "img-004.jpg"}
    inbox = decimal_body(invoke("notifications", inbox_event))["notifications"]
    assert [(n["type"], n["byMemberId"], n["score"], n["byScore"]) for n in inbox] == [
        ("overtaken", "img-001.jpg", Decimal(83), Decimal(95))
    ]


def test_log_events_accepts_the_whole_request(invoke: Invoke, images: None) -> None:
    # When three views are logged with the sample event
    response = invoke("log_events")

    # Then all three are accepted (the fold counts them from the stream, not run here)
    assert response["statusCode"] == 202, response["body"]
    assert decimal_body(response) == {"accepted": 3}


def test_reshard_starts_a_move_once_and_the_worker_waits_for_every_instance_to_see_it(
    invoke: Invoke, board: None
) -> None:
    # When the reshard event is invoked on the board of 3 shards
    response = invoke("reshard")

    # Then 202 with the board showing its move to 5 shards, and a second one is 409
    assert response["statusCode"] == 202, response["body"]
    body = decimal_body(response)
    assert (body["shards"], body["reshard"]["toShards"], body["reshard"]["copied"]) == (3, 5, 0)
    assert invoke("reshard")["statusCode"] == 409
    # And the scheduled worker, run at once, copies nothing yet (some writers may not set the
    # new key yet)
    assert invoke("reshard_worker") == {"boards": 1, "copied": 0, "ended": 0}
