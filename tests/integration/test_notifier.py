"""The notifier on DynamoDB Local, fed the table's real stream records."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from podium.models import Notification
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import TableStream, unique_id

pytestmark = pytest.mark.integration


class RecordingPublisher:
    def __init__(self) -> None:
        self.published: list[Notification] = []
        self.fail = False

    def publish(self, notification: Notification) -> None:
        if self.fail:
            raise ConnectionError("SNS is unreachable")
        self.published.append(notification)


Feed = Callable[[str], list[dict[str, Any]]]


@pytest.fixture
def feed(table_stream: TableStream) -> Feed:
    """The stream records of one board not yet fed, in stream order."""
    seen: set[str] = set()

    def records_of(board: str) -> list[dict[str, Any]]:
        fresh = [
            r
            for r in table_stream.records()
            if r["dynamodb"]["Keys"]["pk"]["S"].startswith(f"M#{board}#") and r["eventID"] not in seen
        ]
        seen.update(r["eventID"] for r in fresh)
        return fresh

    return records_of


def _inbox(
    service: Services, board: str, member: str
) -> list[tuple[str, str | None, Decimal, Decimal | None]]:
    found, _ = service.social.notifications(board, member, 100, None)
    return [(n.type, n.by_member_id, n.score, n.by_score) for n in found]


def _board(service: Services, **settings: Any) -> str:
    board = unique_id("notify")
    service.boards.put_board(board, board_request({"shards": Decimal(3), **settings}))
    return board


def test_a_rival_passing_a_member_tells_it_once(service: Services, feed: Feed) -> None:
    # Given ana (50) follows bo (40); cy (45) follows nobody; zed leads far ahead
    board = _board(service)
    for member, score in (("zed", 900), ("ana", 50), ("bo", 40), ("cy", 45)):
        service.members.put_member(board, member, member_request({"score": Decimal(score)}))
    service.social.put_rivals(board, "ana", ["bo"])
    publisher = RecordingPublisher()
    notifier = service.notifier(publisher)
    for record in feed(board):
        notifier.apply(record)
    publisher.published.clear()

    # When bo passes ana, and the batch is delivered twice
    service.members.submit_score(board, "bo", Decimal(15))
    batch = feed(board)
    for record in batch + batch:
        notifier.apply(record)

    # Then ana has one overtaken notification and one message was published; cy none
    assert _inbox(service, board, "ana") == [("overtaken", "bo", Decimal(50), Decimal(55))]
    assert [(n.type, n.member_id) for n in publisher.published] == [("overtaken", "ana")]
    assert _inbox(service, board, "cy") == []

    # And a further rise of bo (already better) and ana's own drop tell no one
    service.members.submit_score(board, "bo", Decimal(1))
    service.members.submit_score(board, "ana", Decimal(-20))
    for record in feed(board):
        notifier.apply(record)
    assert len(_inbox(service, board, "ana")) == 1


def test_a_rival_that_appears_above_counts(service: Services, feed: Feed) -> None:
    board = _board(service, order="asc")
    service.members.put_member(board, "zed", member_request({"score": Decimal("50.2")}))  # leads: lowest
    service.members.put_member(board, "ana", member_request({"score": Decimal("61.5")}))
    service.social.put_rivals(board, "ana", ["newcomer"])  # rivals need not exist yet
    notifier = service.notifier(RecordingPublisher())

    service.members.put_member(board, "newcomer", member_request({"score": Decimal("59.9")}))
    for record in feed(board):
        notifier.apply(record)

    assert _inbox(service, board, "ana") == [("overtaken", "newcomer", Decimal("61.5"), Decimal("59.9"))]


def test_leader_changes_tell_both_and_a_deleted_leader_nobody(service: Services, feed: Feed) -> None:
    # Given a first leader (not announced)
    board = _board(service)
    notifier = service.notifier(RecordingPublisher())
    service.members.put_member(board, "ana", member_request({"score": Decimal(10)}))
    service.members.put_member(board, "bo", member_request({"score": Decimal(5)}))
    for record in feed(board):
        notifier.apply(record)
    assert _inbox(service, board, "ana") == []

    # When bo takes the lead
    service.members.submit_score(board, "bo", Decimal(10))
    for record in feed(board):
        notifier.apply(record)

    # Then both are told, each with its own score first
    assert _inbox(service, board, "bo") == [("newLeader", "ana", Decimal(15), Decimal(10))]
    assert _inbox(service, board, "ana") == [("newLeader", "bo", Decimal(10), Decimal(15))]

    # When the leader bo is deleted, ana leads again and only ana is told
    service.members.delete_member(board, "bo")
    for record in feed(board):
        notifier.apply(record)
    assert _inbox(service, board, "ana")[0] == ("newLeader", "bo", Decimal(10), Decimal(15))
    assert len(_inbox(service, board, "ana")) == 2


def test_a_failed_publish_is_retried_not_dropped(service: Services, feed: Feed) -> None:
    # Given ana follows bo, and SNS fails on the first delivery
    board = _board(service)
    service.members.put_member(board, "zed", member_request({"score": Decimal(900)}))
    service.members.put_member(board, "ana", member_request({"score": Decimal(2)}))
    service.members.put_member(board, "bo", member_request({"score": Decimal(1)}))
    service.social.put_rivals(board, "ana", ["bo"])
    publisher = RecordingPublisher()
    notifier = service.notifier(publisher)
    for record in feed(board):
        notifier.apply(record)
    service.members.submit_score(board, "bo", Decimal(5))
    batch = feed(board)
    publisher.fail = True
    [record] = [r for r in batch if r["dynamodb"]["Keys"]["sk"]["S"].startswith("SCORE#")]
    with pytest.raises(ConnectionError):
        notifier.apply(record)

    # When the stream retries the record and SNS is back
    publisher.fail = False
    for record in batch:
        notifier.apply(record)

    # Then the notification is in the inbox once, and published once
    assert _inbox(service, board, "ana") == [("overtaken", "bo", Decimal(2), Decimal(6))]
    assert [n.member_id for n in publisher.published] == ["ana"]
