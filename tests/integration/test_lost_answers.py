"""Score submissions whose database answers are lost (devstack/faults.py between the
service and DynamoDB Local, with an exact script of faults): botocore sends a write again
when a connection drops after DynamoDB applied it, and when every attempt fails one of
them may still have been applied. A submission is acknowledged only when applied, once;
refused (429) only when it changed nothing; and answered 500 only when the database gives
no way to tell (``WriteUnconfirmed``). A batch of events, likewise, is never refused once an
attempt of it may have been applied.

botocore's backoff between attempts is made instant here; the attempts are as many as the
service makes (``DYNAMODB_ATTEMPTS``)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any
from unittest.mock import patch

import pytest

from devstack.faults import FaultProxy
from podium.config import Settings
from podium.dal import Database
from podium.dal.client import DYNAMODB_ATTEMPTS
from podium.errors import Throttled, WriteUnconfirmed
from podium.idempotency import SubmissionKey
from podium.validation import EventRequest, board_request, member_request
from podium.wiring import Services
from tests.helpers import TickingClock, unique_id

pytestmark = pytest.mark.integration

RETRIES = DYNAMODB_ATTEMPTS - 1


@pytest.fixture(scope="module")
def proxy(dynamodb_endpoint: str) -> Iterator[FaultProxy]:
    with FaultProxy(dynamodb_endpoint) as running:
        yield running


@pytest.fixture
def service(proxy: FaultProxy, local_tables: Settings) -> Iterator[Services]:
    import boto3
    from botocore.config import Config
    from botocore.retries.standard import ExponentialBackoff

    client: Any = boto3.client(
        "dynamodb",
        endpoint_url=proxy.endpoint,
        config=Config(retries={"mode": "standard", "total_max_attempts": DYNAMODB_ATTEMPTS}),
    )
    with patch.object(ExponentialBackoff, "delay_amount", lambda self, context: 0.01):
        yield Services(Database.connect(local_tables, client=client), clock=TickingClock())
    proxy.clear()


def board_with(service: Services, member: str, score: int, **settings: Any) -> str:
    board = unique_id("lost")
    service.boards.put_board(board, board_request(settings))
    service.members.put_member(board, member, member_request({"score": Decimal(score)}))
    return board


def score_of(service: Services, board: str, member: str) -> Decimal | None:
    return service.members.get_member(board, member).score


def test_a_put_applied_whose_answer_is_lost_is_acknowledged_once(
    service: Services, proxy: FaultProxy
) -> None:
    # Given a member at 10
    board = board_with(service, "ana", 10)

    # When the submission's put is applied but its answer lost (botocore sends it again)
    proxy.script("PutItem", "drop_after")
    change = service.members.submit_score(board, "ana", Decimal(5))

    # Then it is acknowledged, and applied once
    assert (change.score, change.previous_score) == (Decimal(15), Decimal(10))
    assert score_of(service, board, "ana") == 15
    assert proxy.injected("drop_after", "PutItem") == 1


def test_a_put_applied_then_throttled_on_every_retry_is_acknowledged_not_refused(
    service: Services, proxy: FaultProxy
) -> None:
    # Given a member at 10
    board = board_with(service, "ana", 10)

    # When the put is applied with its answer lost, and every attempt after it is throttled
    proxy.script("PutItem", "drop_after", *["throttle"] * RETRIES)
    change = service.members.submit_score(board, "ana", Decimal(5))

    # Then reading back finds it applied: acknowledged (a 429 would say it changed nothing)
    assert change.score == 15
    assert score_of(service, board, "ana") == 15


def test_a_put_throttled_on_every_attempt_is_refused_and_changes_nothing(
    service: Services, proxy: FaultProxy
) -> None:
    # Given a member at 10
    board = board_with(service, "ana", 10)

    # When every attempt of the put is throttled
    proxy.script("PutItem", *["throttle"] * DYNAMODB_ATTEMPTS)

    # Then it is Throttled (429), and the score is unchanged
    with pytest.raises(Throttled):
        service.members.submit_score(board, "ana", Decimal(5))
    assert score_of(service, board, "ana") == 10


@pytest.mark.parametrize("after", [[], ["throttle"] * RETRIES], ids=["retried", "then-throttled"])
def test_a_first_score_of_a_period_whose_answer_is_lost_is_applied_once(
    service: Services, proxy: FaultProxy, after: list[str]
) -> None:
    # Given a daily board whose member has no score today (its first is a transaction)
    board = unique_id("lost-daily")
    service.boards.put_board(board, board_request({"reset": "daily"}))
    service.members.put_member(board, "ana", member_request({}))

    # When the transaction is applied and its answer lost (botocore sends it again with the
    # same ClientRequestToken), or the attempts after it are throttled
    proxy.script("TransactWriteItems", "drop_after", *after)
    change = service.members.submit_score(board, "ana", Decimal(5))

    # Then it is acknowledged, once
    assert (change.score, change.previous_score) == (Decimal(5), None)
    assert score_of(service, board, "ana") == 5


@pytest.mark.parametrize("after", [[], ["throttle"] * RETRIES], ids=["retried", "then-throttled"])
def test_a_keyed_submission_whose_answer_is_lost_is_applied_once_and_answered_as_first(
    service: Services, proxy: FaultProxy, after: list[str]
) -> None:
    # Given a member at 10, and a submission with an Idempotency-Key
    board = board_with(service, "ana", 10)
    key = SubmissionKey.of(unique_id("key"), Decimal(5))

    # When its transaction (the score and the key's record) is applied and its answer lost
    proxy.script("TransactWriteItems", "drop_after", *after)
    first = service.members.submit_score(board, "ana", Decimal(5), key=key)
    # And the client, unsure, sends it again
    again = service.members.submit_score(board, "ana", Decimal(5), key=key)

    # Then both answers are the first one, and it was applied once
    assert (first.score, first.previous_score) == (Decimal(15), Decimal(10))
    assert again == first
    assert score_of(service, board, "ana") == 15


def test_a_keyed_submission_refused_on_every_attempt_can_be_sent_again(
    service: Services, proxy: FaultProxy
) -> None:
    # Given a member at 10
    board = board_with(service, "ana", 10)
    key = SubmissionKey.of(unique_id("key"), Decimal(5))

    # When every attempt of the keyed submission's transaction is throttled
    proxy.script("TransactWriteItems", *["throttle"] * DYNAMODB_ATTEMPTS)
    with pytest.raises(Throttled):
        service.members.submit_score(board, "ana", Decimal(5), key=key)

    # Then nothing changed, and the same key applies it once when sent again
    assert score_of(service, board, "ana") == 10
    assert service.members.submit_score(board, "ana", Decimal(5), key=key).score == 15
    assert score_of(service, board, "ana") == 15


def test_events_whose_answer_is_lost_then_throttled_are_unconfirmed_never_refused(
    service: Services, proxy: FaultProxy
) -> None:
    # Given an event board with a member
    board = board_with(service, "img", 0)
    events = [EventRequest("img", Decimal(3), None)]

    # When the batch is logged with its answer lost, and every attempt after it is throttled
    proxy.script("TransactWriteItems", "drop_after", *["throttle"] * RETRIES)

    # Then it is a 500 that says the outcome is not known (a 429 would say nothing changed)
    with pytest.raises(WriteUnconfirmed):
        service.members.log_events(board, events)
    # And it was in fact logged, once
    member, pending = service.members.fresh_member(board, "img")
    assert (member.score, pending) == (Decimal(3), 1)


def test_events_throttled_on_every_attempt_are_refused_and_log_nothing(
    service: Services, proxy: FaultProxy
) -> None:
    # Given an event board with a member
    board = board_with(service, "img", 0)

    # When every attempt of the batch's transaction is throttled
    proxy.script("TransactWriteItems", *["throttle"] * DYNAMODB_ATTEMPTS)

    # Then it is Throttled (429), and nothing was logged
    with pytest.raises(Throttled):
        service.members.log_events(board, [EventRequest("img", Decimal(3), None)])
    member, pending = service.members.fresh_member(board, "img")
    assert (member.score, pending) == (Decimal(0), 0)
