"""What each request publishes of its DynamoDB use (``podium.telemetry``), on DynamoDB Local,
which reports consumed capacity as DynamoDB does: against DynamoDB's billing rules for a
request simple enough to work out by hand, and against the benchmark's recorder
(``bench.measure``) watching the same client for the others."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal

import pytest

import podium.wiring
from bench.measure import Recorder
from podium import telemetry
from podium.config import LOCAL_STACK_MARKER, Settings
from podium.dal import Database
from podium.validation import board_request, member_request
from tests.emf import RouteFunctions, emf_metrics, one_value
from tests.helpers import unique_id

pytestmark = pytest.mark.integration


@pytest.fixture
def functions(
    dynamodb_endpoint: str, local_tables: Settings, monkeypatch: pytest.MonkeyPatch
) -> Iterator[RouteFunctions]:
    """The API's functions on DynamoDB Local, every caller an admin."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", dynamodb_endpoint)
    monkeypatch.setenv("TABLE_NAME", local_tables.table_name)
    monkeypatch.setenv("STATE_TABLE_NAME", local_tables.state_table)
    monkeypatch.setenv("PODIUM_AUTH", "off")
    monkeypatch.setenv(LOCAL_STACK_MARKER, "1")  # the local stack's switch, as it sets it
    podium.wiring.reset()
    loaded = RouteFunctions()
    yield loaded
    podium.wiring.reset()
    loaded.unload()


@pytest.fixture
def recorder(functions: RouteFunctions) -> Recorder:
    """Every request the functions' client sends, and what DynamoDB answered it consumed."""
    database = podium.wiring.services().db
    assert isinstance(database, Database)
    watching = Recorder()
    watching.attach(database.tables.client)
    return watching


def test_reading_a_board_publishes_one_item_and_half_a_read_unit(
    functions: RouteFunctions, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a board, a single item of far less than 4 KB
    board = unique_id("emf")
    podium.wiring.services().boards.put_board(board, board_request({"title": "a board"}))
    capsys.readouterr()
    # When it is read
    response = functions.invoke("get_board", board)
    published = emf_metrics(capsys.readouterr().out)
    # Then the request published one item read, billed as an eventually consistent read of
    # one 4 KB block (0.5 RCU), and nothing written
    assert response["statusCode"] == 200, response["body"]
    pattern = {telemetry.ACCESS_PATTERN: "GET /boards/{boardId}"}
    assert one_value(published, telemetry.ITEMS_READ, **pattern) == 1
    assert one_value(published, telemetry.CONSUMED_RCU, **pattern) == 0.5
    assert one_value(published, telemetry.CONSUMED_WCU, **pattern) == 0


def test_a_top_and_a_submission_publish_what_their_requests_consumed(
    functions: RouteFunctions, recorder: Recorder, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given a board of 4 shards and 60 members, img-001.jpg among them (the member of the
    # submission's sample event)
    board = unique_id("emf")
    service = podium.wiring.services()
    service.boards.put_board(board, board_request({"shards": Decimal(4)}))
    scores = {f"m{i:02d}": Decimal(i * 13 % 60) for i in range(59)} | {"img-001.jpg": Decimal(5)}
    for member, score in scores.items():
        service.members.put_member(board, member, member_request({"score": score}))
    capsys.readouterr()
    # When a top 10 is read from the index, then a score is submitted
    with recorder.window() as top_window:
        top = functions.invoke("top", board, {"limit": "10", "consistent": "true"})
    with recorder.window() as submit_window:
        submitted = functions.invoke("submit_score", board)
    published = emf_metrics(capsys.readouterr().out)
    assert top["statusCode"] == 200, top["body"]
    listed = [entry["memberId"] for entry in json.loads(top["body"])["entries"]]
    assert listed == sorted(scores, key=lambda m: (-scores[m], m))[:10]
    assert submitted["statusCode"] == 200, submitted["body"]
    # Then the top published the items its reads went through and their units, as the
    # recorder saw DynamoDB answer them, at least the 10 entries it lists
    top_reads = [call for call in top_window.calls if call.is_read]
    pattern = {telemetry.ACCESS_PATTERN: "GET /boards/{boardId}/top"}
    items = one_value(published, telemetry.ITEMS_READ, **pattern)
    assert items == sum(call.items_read for call in top_reads)
    assert items >= 10
    units = one_value(published, telemetry.CONSUMED_RCU, **pattern)
    assert units == pytest.approx(sum(call.capacity for call in top_reads))
    assert units > 0
    # and the submission the units its writes consumed
    writes = [call for call in submit_window.calls if not call.is_read]
    pattern = {telemetry.ACCESS_PATTERN: "POST /boards/{boardId}/members/{memberId}/score"}
    written = one_value(published, telemetry.CONSUMED_WCU, **pattern)
    assert written == pytest.approx(sum(call.capacity for call in writes))
    assert written >= 1  # a score item of under 1 KB at least
