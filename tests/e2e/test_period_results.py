"""A week's final results, announced once, end to end over HTTP: a local stack of this
module's own runs the template's schedules every few seconds (``--schedule-seconds``), its
clock is moved across Monday 00:00 UTC, and what reaches the SNS topic (moto server, read
through an SQS queue subscribed to it) and the members' inboxes is compared with a model.

The stack is this module's own: the job announces every board of its table, and the tests
here move its clock.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pytest
import requests

from podium_client import Event, PodiumClient
from tests.helpers import eventually, expected_listing, unique_id
from tests.messaging import LocalStack, TopicTap, subscribe_to_notifications

if TYPE_CHECKING:
    from tests.conftest import StackLauncher

pytestmark = pytest.mark.e2e

TIMEOUT = 30
SCHEDULE_SECONDS = 2
WAIT = 300  # the stream's lag (the fold before the results) and a few runs, on a busy machine
IN_THE_WEEK = "2027-03-10T12:00:00Z"  # a Wednesday of 2027-W10 (after the stack's real start)
JUST_BEFORE_THE_END = "2027-03-14T23:59:59Z"
AFTER_THE_END = "2027-03-15T00:01:05Z"  # Monday of 2027-W11, past the job's minute of grace
WEEK = "2027-W10"


@pytest.fixture(scope="module")
def local(launch_stack: StackLauncher, own_dynamodb: str) -> Iterator[LocalStack]:
    with launch_stack(
        "--schedule-seconds", str(SCHEDULE_SECONDS), name="periods-stack", dynamodb=own_dynamodb
    ) as stack:
        yield stack


@pytest.fixture(scope="module")
def stack_url(local: LocalStack) -> str:
    return local.url


@pytest.fixture
def tap(local: LocalStack) -> Iterator[TopicTap]:
    reader = subscribe_to_notifications(local)
    try:
        yield reader
    finally:
        reader.close()


def _of(board: str, kind: str) -> Any:
    return lambda m: m.attributes.get("boardId") == board and m.attributes.get("type") == kind


def _results_in_inboxes(podium: PodiumClient, board: str, members: list[str]) -> dict[str, list[Any]]:
    return {
        m: [
            (n.period, n.rank, n.score)
            for n in podium.iter_notifications(board, m)
            if n.type == "periodResult"
        ]
        for m in members
    }


def _job_runs(local: LocalStack) -> int:
    """How many runs of the period results job the stack has logged (one line a run)."""
    assert local.log_path is not None
    return local.log_path.read_text(errors="replace").count('"message":"period results"')


def test_a_week_s_results_are_announced_once_across_the_boundary(
    podium: PodiumClient, tap: TopicTap, set_clock: Any, local: LocalStack
) -> None:
    # Given a weekly increment board in 2027-W10 with ties, announceTop 100 lowered to 12
    # with PUT, scores, and views logged just before the week ends
    set_clock(IN_THE_WEEK)
    board = unique_id("weekly")
    podium.create_board(board, reset="weekly", shards=3, announce_top=100)
    assert podium.update_board(board, announce_top=12).announce_top == 12
    rng = random.Random("e2e-week")
    scores = {f"p-{i:03d}": Decimal(rng.randrange(0, 40)) / 2 for i in range(130)}
    for member, score in scores.items():
        podium.put_member(board, member, score=score)
    set_clock(JUST_BEFORE_THE_END)
    views = [Event(member_id="p-007", value=Decimal(1)) for _ in range(30)]
    podium.log_events(board, views)
    scores["p-007"] += 30

    # When the clock passes Monday 00:00 UTC (and the job's grace), the job runs on its schedule
    set_clock(AFTER_THE_END)
    [closed] = tap.wait_for(_of(board, "periodClosed"), timeout=WAIT)

    # Then the periodClosed message carries the model's final top 100 and memberCount
    listing = expected_listing(scores)
    assert closed.body["period"] == WEEK
    assert closed.body["memberCount"] == len(scores)
    assert [(e["rank"], e["memberId"], e["score"]) for e in closed.body["entries"]] == listing[:100]
    assert closed.attributes["announcementId"] == closed.body["announcementId"]

    # And each member ranked 12th or better (ties at the cut whole) has exactly one
    # periodResult with its rank and score, in its inbox and on the topic; nobody else has one
    expected = {m: (rank, score) for rank, m, score in listing if rank <= 12}
    told = tap.wait_for(_of(board, "periodResult"), count=len(expected), timeout=WAIT)
    inboxes = _results_in_inboxes(podium, board, list(scores))
    assert {m: found for m, found in inboxes.items() if found} == {
        m: [(WEEK, rank, score)] for m, (rank, score) in expected.items()
    }

    # When writes land in the new week, and the job runs several more times (three runs
    # logged after the write: two at least began after it; a fixed 12 s wait was here)
    runs = _job_runs(local)
    podium.put_member(board, "p-001", score=Decimal(1000))

    def three_more_runs() -> None:
        tap.receive(wait_seconds=1)
        assert _job_runs(local) >= runs + 3

    eventually(three_more_runs, timeout=WAIT, interval=0.1)

    # Then nothing was announced twice, and the ended week's ranking did not move
    assert len(tap.wait_for(_of(board, "periodClosed"))) == 1
    again = tap.wait_for(_of(board, "periodResult"), count=len(expected))
    assert sorted(m.body["memberId"] for m in again) == sorted(expected)
    assert {(m.body["memberId"], m.body["rank"], m.body["score"]) for m in told} == {
        (m, rank, score) for m, (rank, score) in expected.items()
    }
    assert _results_in_inboxes(podium, board, list(expected)) == {
        m: [(WEEK, rank, score)] for m, (rank, score) in expected.items()
    }
    week = podium.top(board, period=WEEK, limit=100, consistent=True)
    assert [(e.rank, e.member_id, e.score) for e in week.entries] == listing[:100]
    current = eventually(lambda: podium.top(board, limit=1, consistent=True))
    assert [(e.member_id, e.score) for e in current.entries] == [("p-001", Decimal(1000))]


def test_announce_top_is_refused_on_a_board_that_never_resets_and_out_of_range(podium: PodiumClient) -> None:
    board = unique_id("never")
    for body, named in (
        ({"announceTop": 5}, "reset"),
        ({"reset": "daily", "announceTop": 10001}, "announceTop must be an integer from 0 to 10000"),
        ({"reset": "daily", "announceTop": -1}, "0 to 10000"),
        ({"reset": "daily", "announceTop": "5"}, "announceTop"),
    ):
        response = requests.put(f"{podium.base_url}/boards/{board}", json=body, timeout=TIMEOUT)
        assert response.status_code == 400, response.text
        assert named in response.json()["message"]
    shown = requests.put(f"{podium.base_url}/boards/{board}", json={"reset": "daily"}, timeout=TIMEOUT).json()
    assert shown["announceTop"] == 100
    never = requests.put(f"{podium.base_url}/boards/{board}-n", json={}, timeout=TIMEOUT).json()
    assert "announceTop" not in never
