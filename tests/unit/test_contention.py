"""Optimistic writes under contention: the retries back off (jittered, growing) within a
time budget, not a count, and a member contended past it answers 429 Throttled with
Retry-After, never 409 (a fake clock whose sleeps move it)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import boto3
import pytest

from podium import config, http, retry
from podium.config import Settings
from podium.dal import Database
from podium.errors import Throttled, VersionConflict
from podium.validation import board_request, member_request
from podium.wiring import Services
from tests.helpers import TickingClock


class FakeTime:
    """A monotonic clock that moves only when slept on, remembering each sleep."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(retry, "monotonic", fake.monotonic)
    monkeypatch.setattr(retry, "sleep", fake.sleep)
    return fake


def test_attempts_back_off_within_the_time_budget(fake_time: FakeTime) -> None:
    # When every attempt fails, for as long as the attempts go on
    made = list(retry.attempts())

    # Then they went on for the budget (not a count), and no longer
    assert sum(fake_time.slept) <= config.CONTENTION_BUDGET_SECONDS
    assert sum(fake_time.slept) > config.CONTENTION_BUDGET_SECONDS - retry.MAX_BACKOFF_SECONDS
    assert made == list(range(len(made)))
    # And each wait is jittered below a cap that grows from the first and stops growing
    assert all(0 <= wait <= retry.MAX_BACKOFF_SECONDS for wait in fake_time.slept)
    assert max(fake_time.slept[:3]) <= 4 * retry.FIRST_BACKOFF_SECONDS
    assert len(set(fake_time.slept)) > len(fake_time.slept) // 2


def test_time_spent_in_the_attempts_counts_against_the_budget(fake_time: FakeTime) -> None:
    # When each attempt itself takes a second
    made = 0
    for _ in retry.attempts():
        made += 1
        fake_time.now += 1.0

    # Then the attempts stop once the budget is spent
    assert made <= config.CONTENTION_BUDGET_SECONDS + 1


@pytest.fixture
def services(moto_tables: Settings) -> tuple[Services, Database]:
    db = Database.connect(moto_tables, client=boto3.client("dynamodb", region_name="us-east-1"))
    return Services(db, clock=TickingClock()), db


def test_a_member_contended_past_the_budget_is_429_throttled_with_retry_after(
    services: tuple[Services, Database], fake_time: FakeTime, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a member whose every conditional write loses to another writer
    service, db = services
    service.boards.put_board("hot", board_request({"operator": "increment"}))
    service.members.put_member("hot", "m", member_request({"score": Decimal(1)}))

    def always_contended(*args: Any, **kwargs: Any) -> None:
        raise VersionConflict("changed meanwhile")

    monkeypatch.setattr(db.members, "write_score", always_contended)

    # When it submits a score
    with pytest.raises(Throttled) as raised:
        service.members.submit_score("hot", "m", Decimal(5))

    # Then it is Throttled after the budget, naming the member, and changed nothing
    error = raised.value
    assert sum(fake_time.slept) <= config.CONTENTION_BUDGET_SECONDS
    assert "m" in error.message
    assert error.retry_after >= 1
    answer = http.answer_error(error)
    assert (answer.status_code, answer.headers["Retry-After"]) == (429, str(error.retry_after))
    assert service.members.get_member("hot", "m").score == 1
