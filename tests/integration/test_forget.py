"""Deleting a member forgets it (docs/api.md, DELETE of a member): its scores in every period,
its rivals list and its follower edges, its inbox, and its place in the rivals lists of
the members who followed it. A member added again starts afresh, even before the stream
has caught up, and a write that races the delete never leaves a ranked member without a
profile. On DynamoDB Local, with the table's real stream records fed to the notifier
(twice, as Lambda may deliver them)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from podium import periods
from podium.config import Settings
from podium.dal import Database
from podium.errors import NotFound
from podium.idempotency import SubmissionKey
from podium.models import Notification
from podium.stream.notify import Notifier
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import TableStream, table_of, unique_id

pytestmark = pytest.mark.integration

Feed = Callable[[], list[dict[str, Any]]]
RaceInDelete = Callable[[str, Callable[[], None]], None]


class RecordingPublisher:
    def __init__(self) -> None:
        self.published: list[Notification] = []

    def publish(self, notification: Notification) -> None:
        self.published.append(notification)


@pytest.fixture
def board(service: Services) -> str:
    """A daily board, so that a member has scores in more than one period."""
    board_id = unique_id("forget")
    service.boards.put_board(board_id, board_request({"shards": Decimal(3), "reset": "daily"}))
    return board_id


@pytest.fixture
def feed(table_stream: TableStream, board: str) -> Feed:
    """The board's stream records not yet fed (members, follower edges and inboxes)."""
    seen: set[str] = set()

    def records() -> list[dict[str, Any]]:
        fresh = [
            r
            for r in table_stream.records()
            if f"#{board}#" in r["dynamodb"]["Keys"]["pk"]["S"] and r["eventID"] not in seen
        ]
        seen.update(r["eventID"] for r in fresh)
        return fresh

    return records


@pytest.fixture
def notifier(service: Services) -> Notifier:
    return service.notifier(RecordingPublisher())


def deliver_twice(notifier: Notifier, batch: list[dict[str, Any]]) -> None:
    """The batch as the stream may deliver it: whole, then whole again."""
    for record in batch + batch:
        notifier.apply(record)


def items_of(dynamodb_client: Any, tables: Settings, pk: str) -> list[tuple[str, str]]:
    """Every item of the partition, as (pk, sk)."""
    response = dynamodb_client.query(
        TableName=table_of(tables, pk),
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": pk}},
        ConsistentRead=True,
    )
    return [(item["pk"]["S"], item["sk"]["S"]) for item in response["Items"]]


def inbox(service: Services, board: str, member: str) -> list[tuple[str, str | None]]:
    found, _ = service.social.notifications(board, member, 100, None)
    return [(n.type, n.by_member_id) for n in found]


def ranked(service: Services, board: str, period: str) -> list[str]:
    page = service.reads.top(board, 100, None, with_data=False, requested_period=period, consistent=True)
    return [entry.member_id for entry in page.entries]


def test_deleting_a_member_forgets_everything_of_it_once(
    service: Services,
    board: str,
    feed: Feed,
    notifier: Notifier,
    local_tables: Settings,
    dynamodb_client: Any,
) -> None:
    # Given ana, with scores on two days, who follows bo and cy; bo and cy follow ana; and
    # ana has been told that bo passed her
    table = local_tables
    first_day = periods.period_of("daily", service.clock())
    for member, score in (("ana", 50), ("bo", 40), ("cy", 10)):
        service.members.put_member(board, member, member_request({"score": Decimal(score)}))
    service.social.put_rivals(board, "ana", ["bo", "cy"])
    service.social.put_rivals(board, "bo", ["ana", "cy"])
    service.social.put_rivals(board, "cy", ["ana"])
    service.members.submit_score(board, "bo", Decimal(20))
    deliver_twice(notifier, feed())
    assert inbox(service, board, "ana") == [("overtaken", "bo")]
    service.clock.moment += timedelta(days=1)  # type: ignore[attr-defined]  # the TickingClock
    second_day = periods.period_of("daily", service.clock())
    service.members.submit_score(board, "ana", Decimal(5))
    service.members.submit_score(board, "bo", Decimal(1))
    deliver_twice(notifier, feed())
    assert "ana" in ranked(service, board, first_day)
    assert "ana" in ranked(service, board, second_day)

    # When ana is deleted, and the stream delivers the removal twice
    service.members.delete_member(board, "ana")
    deliver_twice(notifier, feed())

    # Then nothing of ana is left: no profile, scores (either day), rivals list, edges of its
    # own follows, followers' edges, inbox; and bo's and cy's lists no longer name it
    assert items_of(dynamodb_client, table, f"M#{board}#ana") == []
    assert items_of(dynamodb_client, table, f"N#{board}#ana") == []
    assert items_of(dynamodb_client, table, f"F#{board}#ana") == []
    assert ("F#" + board + "#bo", "ana") not in items_of(dynamodb_client, table, f"F#{board}#bo")
    assert items_of(dynamodb_client, table, f"F#{board}#cy") == [(f"F#{board}#cy", "bo")]
    assert service.social.get_rivals(board, "bo") == ["cy"]
    assert service.social.get_rivals(board, "cy") == []
    assert "ana" not in ranked(service, board, first_day)
    assert "ana" not in ranked(service, board, second_day)
    with pytest.raises(NotFound):
        service.members.get_member(board, "ana")
    # And a delete again (a retried request) is fine and changes nothing
    service.members.delete_member(board, "ana")
    assert items_of(dynamodb_client, table, f"M#{board}#ana") == []


def test_a_member_that_made_a_keyed_submission_is_deleted_whole(
    service: Services, board: str, local_tables: Settings, dynamodb_client: Any
) -> None:
    # Given ana, whose last score came with an Idempotency-Key (its record, KEY#..., sorts
    # before her profile in her partition), and bo
    today = periods.period_of("daily", service.clock())
    for member, score in (("ana", 50), ("bo", 40)):
        service.members.put_member(board, member, member_request({"score": Decimal(score)}))
    service.members.submit_score(board, "ana", Decimal(6), key=SubmissionKey.of("k-1", Decimal(6)))

    # When ana is deleted
    service.members.delete_member(board, "ana")

    # Then nothing of her is left, and she is ranked nowhere
    assert items_of(dynamodb_client, local_tables, f"M#{board}#ana") == []
    assert ranked(service, board, today) == ["bo"]
    with pytest.raises(NotFound):
        service.members.get_member(board, "ana")


def test_a_member_added_again_starts_afresh_before_and_after_the_stream_forgets(
    service: Services, board: str, feed: Feed, notifier: Notifier
) -> None:
    # Given ana (50), told that bo passed her, following bo; cy follows ana; zed leads
    for member, score in (("zed", 900), ("ana", 50), ("bo", 40), ("cy", 10)):
        service.members.put_member(board, member, member_request({"score": Decimal(score)}))
    service.social.put_rivals(board, "ana", ["bo"])
    service.social.put_rivals(board, "cy", ["ana"])
    service.members.submit_score(board, "bo", Decimal(20))
    deliver_twice(notifier, feed())
    assert inbox(service, board, "ana") == [("overtaken", "bo")]

    # When ana is deleted and added again before the notifier has read the removal
    service.members.delete_member(board, "ana")
    service.members.put_member(board, "ana", member_request({}))

    # Then the new ana has no score of the old one, no rivals, and an empty inbox already
    again = service.members.get_member(board, "ana")
    assert again.score is None  # a daily board: no score yet in this period
    assert service.social.get_rivals(board, "ana") == []
    assert inbox(service, board, "ana") == []

    # And once the notifier reads the removal (twice), cy no longer follows ana
    removal = feed()
    deliver_twice(notifier, removal)
    assert service.social.get_rivals(board, "cy") == []

    # When cy follows the new ana, ana (70) follows bo (60) again, and bo passes the new ana
    service.social.put_rivals(board, "cy", ["ana"])
    service.social.put_rivals(board, "ana", ["bo"])
    service.members.submit_score(board, "ana", Decimal(70))
    service.members.submit_score(board, "bo", Decimal(20))
    deliver_twice(notifier, feed())
    assert inbox(service, board, "ana") == [("overtaken", "bo")]

    # Then the old removal delivered again forgets nothing of the new ana
    deliver_twice(notifier, removal)
    assert service.social.get_rivals(board, "cy") == ["ana"]
    assert service.social.get_rivals(board, "ana") == ["bo"]
    assert inbox(service, board, "ana") == [("overtaken", "bo")]


@pytest.fixture
def race_in_delete(store: Database, monkeypatch: pytest.MonkeyPatch) -> RaceInDelete:
    """Run ``write`` once inside the delete of the member partition ``pk``: after the delete
    has listed the member's items, before it removes them (the window in which a write that
    creates an item would be left behind)."""

    def arrange(pk: str, write: Callable[[], None]) -> None:
        tables = store.members.tables
        original = tables.query_items
        fired: list[bool] = []

        def query_items(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
            found = list(original(request))
            if not fired and request["ExpressionAttributeValues"][":p"]["S"] == pk:
                fired.append(True)
                write()
            return iter(found)

        monkeypatch.setattr(tables, "query_items", query_items)

    return arrange


def test_writes_racing_the_delete_find_the_member_gone_and_leave_no_ghost(
    service: Services,
    board: str,
    race_in_delete: RaceInDelete,
    local_tables: Settings,
    dynamodb_client: Any,
) -> None:
    # Given ana, with a score yesterday and none yet today (a daily board)
    service.members.put_member(board, "ana", member_request({"score": Decimal(50)}))
    service.clock.moment += timedelta(days=1)  # type: ignore[attr-defined]  # the TickingClock
    today = periods.period_of("daily", service.clock())
    outcomes: list[str] = []

    def racing_writes() -> None:
        for name, write in (
            ("score", lambda: service.members.submit_score(board, "ana", Decimal(7))),
            ("rivals", lambda: service.social.put_rivals(board, "ana", ["bo"])),
        ):
            try:
                write()
                outcomes.append(f"{name} landed")
            except NotFound:
                outcomes.append(f"{name} 404")

    # When a first score of today and a rivals list are written while the delete runs
    race_in_delete(f"M#{board}#ana", racing_writes)
    service.members.delete_member(board, "ana")

    # Then both find the member gone, and nothing of ana is left: no score ranked today
    assert outcomes == ["score 404", "rivals 404"]
    assert items_of(dynamodb_client, local_tables, f"M#{board}#ana") == []
    assert items_of(dynamodb_client, local_tables, f"F#{board}#bo") == []
    assert ranked(service, board, today) == []


def test_a_late_second_delete_leaves_a_member_added_again_in_between(
    service: Services, store: Database, board: str
) -> None:
    # Given a delete of ana that has set its tombstone and is slow to go on (a retried
    # request beside the first), and the first delete that finishes meanwhile
    service.members.put_member(board, "ana", member_request({"score": Decimal(50)}))
    gone = store.members.fence(board, "ana", 1)
    assert gone is not None
    service.members.delete_member(board, "ana")

    # When ana is added again, and only then the slow delete goes on
    service.members.put_member(board, "ana", member_request({"score": Decimal(7)}))
    store.members.delete_member(board, "ana", gone)

    # Then the new ana is whole: GET sees it, with its score, and it is ranked
    assert service.members.get_member(board, "ana").score == Decimal(7)
    assert ranked(service, board, periods.period_of("daily", service.clock())) == ["ana"]
