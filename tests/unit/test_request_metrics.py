"""The metrics each request and each head write publish (``podium.telemetry``), read from the
function's output as CloudWatch reads it, against what an independent observer saw: the
benchmark's recorder (``bench.measure``) on the same client counts every DynamoDB request
and what DynamoDB answered it consumed; the stream records say when each change was made."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest

import podium.wiring
from bench.measure import Recorder
from devstack.streams import StreamTail
from podium import telemetry
from podium.config import LOCAL_STACK_MARKER, Settings
from podium.dal import Database
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.emf import RouteFunctions, emf_metrics, one_value
from tests.helpers import TickingClock, unique_id

Invoke = Callable[..., dict[str, Any]]
TOP = "GET /boards/{boardId}/top"


@pytest.fixture
def invoke(moto_tables: Settings, monkeypatch: pytest.MonkeyPatch) -> Iterator[Invoke]:
    """Run a route's function as Lambda does (``invoke("top", board, query)``), on the
    template's table in moto, every caller an admin."""
    monkeypatch.setenv("TABLE_NAME", moto_tables.table_name)
    monkeypatch.setenv("STATE_TABLE_NAME", moto_tables.state_table)
    monkeypatch.setenv("PODIUM_AUTH", "off")
    monkeypatch.setenv(LOCAL_STACK_MARKER, "1")  # the local stack's switch, as it sets it
    podium.wiring.reset()
    functions = RouteFunctions()
    yield functions.invoke
    podium.wiring.reset()
    functions.unload()


def a_board(shards: int, scores: dict[str, int]) -> str:
    """A board with these members, written through the service (on the environment's table)."""
    board = unique_id("emf")
    service = podium.wiring.services()
    service.boards.put_board(board, board_request({"shards": Decimal(shards), "publicRead": True}))
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": Decimal(score)}))
    return board


def test_a_top_publishes_the_items_and_units_of_every_shard_query(
    invoke: Invoke, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a board of 8 shards (read by 8 queries at once, on the fan-out threads) and a
    # recorder of every request the function's client sends
    scores = {f"m{i:02d}": i * 7 % 50 for i in range(40)}
    board = a_board(8, scores)
    recorder = Recorder()
    database = podium.wiring.services().db
    assert isinstance(database, Database)
    recorder.attach(database.tables.client)
    capsys.readouterr()
    # When the index is read for a page of 10
    with recorder.window() as window:
        response = invoke("top", board, {"limit": "10", "consistent": "true"})
    published = emf_metrics(capsys.readouterr().out)
    # Then the page is the model's top 10
    assert response["statusCode"] == 200, response["body"]
    listed = [entry["memberId"] for entry in json.loads(response["body"])["entries"]]
    assert listed == sorted(scores, key=lambda m: (-scores[m], m))[:10]
    # and the request published what all its requests read, the 8 shard queries included
    assert sum(call.operation == "Query" for call in window.calls) >= 8
    reads = [call for call in window.calls if call.is_read]
    pattern = {telemetry.ACCESS_PATTERN: TOP}
    assert one_value(published, telemetry.ITEMS_READ, **pattern) == sum(call.items_read for call in reads)
    assert one_value(published, telemetry.CONSUMED_RCU, **pattern) == pytest.approx(
        sum(c.capacity for c in reads)
    )
    assert one_value(published, telemetry.CONSUMED_WCU, **pattern) == 0
    assert one_value(published, telemetry.SERVER_ERROR, **pattern) == 0
    assert one_value(published, telemetry.CLIENT_ERROR, **pattern) == 0


def test_an_error_answer_is_counted_for_its_route(
    invoke: Invoke, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a board that does not exist, and one whose read fails on our side
    board = a_board(1, {"a": 1})
    capsys.readouterr()
    # When each is asked for its top
    missing = invoke("top", unique_id("nothing"))

    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("the read failed")

    monkeypatch.setattr(podium.wiring.services().reads, "top", broken)
    failed = invoke("top", board)
    published = emf_metrics(capsys.readouterr().out)
    # Then the first is a 4xx and the second a 5xx, each counted once under the route
    assert (missing["statusCode"], failed["statusCode"]) == (404, 500)

    def counted(name: str) -> list[float]:
        return [value for m in published if m.name == name for value in m.values]

    assert counted(telemetry.CLIENT_ERROR) == [1, 0]
    assert counted(telemetry.SERVER_ERROR) == [0, 1]
    assert {m.dimension_map[telemetry.ACCESS_PATTERN] for m in published} == {TOP}


def test_a_head_write_publishes_how_long_the_head_lagged_its_oldest_change(
    moto_tables: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given three score changes of one board written at known times, read off the stream
    import boto3

    writes = TickingClock(step=timedelta(milliseconds=250))
    writer = Services(Database.connect(moto_tables), clock=writes)
    board = unique_id("lag")
    writer.boards.put_board(board, board_request({}))
    for member, score in {"a": 5, "b": 9, "c": 7}.items():
        writer.members.put_member(board, member, member_request({"score": Decimal(score)}))
    client = boto3.client("dynamodb", region_name="us-east-1")
    stream = client.describe_table(TableName=moto_tables.table_name)["Table"]["LatestStreamArn"]
    records = StreamTail(boto3.client("dynamodbstreams", region_name="us-east-1"), stream).read()
    changed = [
        int(r["dynamodb"]["NewImage"]["t"]["N"])
        for r in records
        if r["dynamodb"]["Keys"]["sk"]["S"] == "SCORE#all"
    ]
    assert len(changed) == 3
    # When the aggregator, 1.5 s after the last of them, brings the head up to date
    now = datetime.fromtimestamp(max(changed) / 1_000_000, UTC) + timedelta(milliseconds=1500)
    aggregator = Services(Database.connect(moto_tables), clock=lambda: now).aggregator
    capsys.readouterr()
    assert aggregator.keep_heads(records) == set()
    # Then it published one lag: from the oldest change to the write
    expected = (now - datetime.fromtimestamp(min(changed) / 1_000_000, UTC)) / timedelta(milliseconds=1)
    assert one_value(emf_metrics(capsys.readouterr().out), telemetry.HEAD_LAG) == pytest.approx(expected)
    assert expected > 1500  # the oldest change, not the newest


def test_request_metrics_off_prints_no_line(
    invoke: Invoke, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a stack deployed with RequestMetrics=off
    board = a_board(1, {"a": 1})
    monkeypatch.setenv("REQUEST_METRICS", "off")
    podium.wiring.reset()
    capsys.readouterr()
    # When a request is answered
    response = invoke("top", board)
    # Then it prints no metrics: its log holds no EMF line
    assert response["statusCode"] == 200, response["body"]
    assert emf_metrics(capsys.readouterr().out) == []
