"""Scheduled snapshots end to end: a local stack runs the template's schedule every
few seconds (``--schedule-seconds``), and ``GET /boards/{boardId}/snapshots`` lists what
it recorded.

That stack is this module's own, with tables of its own: a run snapshots every board of
its table, and the session's shared stack holds hundreds, which a run every 2 seconds
would keep DynamoDB Local busy with for the rest of the session. Its DynamoDB Local is its
own too (``own_dynamodb``): the worker's shared one, full of the session's tables and
streams, slowed the stack's stream and schedule (33 s in a full run for what takes a few
seconds on an empty one).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import pytest
import requests

from podium_client import PodiumClient, SnapshotPage
from tests.helpers import eventually, unique_id

if TYPE_CHECKING:
    from tests.conftest import StackLauncher

pytestmark = pytest.mark.e2e

TIMEOUT = 30
SCHEDULE_SECONDS = 2
# Two runs after the writes and the stream's lag, with room for a slow, busy machine.
WAIT = 15 * SCHEDULE_SECONDS


@pytest.fixture(scope="module")
def stack_url(launch_stack: StackLauncher, own_dynamodb: str) -> Iterator[str]:
    """This module's stack, whose schedule runs every SCHEDULE_SECONDS."""
    with launch_stack(
        "--schedule-seconds", str(SCHEDULE_SECONDS), name="snapshots-stack", dynamodb=own_dynamodb
    ) as local:
        yield local.url


def test_snapshots_appear_on_schedule_newest_first(podium: PodiumClient) -> None:
    # Given a board of 12 members, ties included, all written before we start watching
    board = unique_id("snapshots")
    podium.create_board(board, shards=3)
    members = {f"player-{i:02d}": (i * 7) % 10 for i in range(12)}
    for member, score in members.items():
        podium.put_member(board, member, score=score)
    top = podium.top(board, limit=100, consistent=True)
    written = datetime.now(UTC).replace(microsecond=0)  # takenAt is in whole seconds

    # When the schedule has run at least twice since
    def two_runs_later() -> SnapshotPage:
        page = podium.snapshots(board, limit=100)
        assert len([s for s in page.snapshots if s.taken_at > written]) >= 2
        return page

    page = eventually(two_runs_later, timeout=WAIT, interval=0.5)
    listed = page.snapshots

    # Then they are listed newest first, each once, each with the contract's fields (read raw)
    taken = [s.taken_at for s in listed]
    assert taken == sorted(taken, reverse=True)
    assert len(set(taken)) == len(taken)
    assert len({s.snapshot_id for s in listed}) == len(listed)
    raw = requests.get(f"{podium.base_url}/boards/{board}/snapshots", timeout=TIMEOUT).json()
    assert set(raw) == {"snapshots", "nextCursor"}
    assert all(set(s) == {"snapshotId", "takenAt", "memberCount", "entries"} for s in raw["snapshots"])
    assert page.next_cursor is None

    # And each one taken after the writes holds what top?limit=100&consistent=true showed
    for snapshot in (s for s in listed if s.taken_at > written):
        assert snapshot.entries == top.entries
    assert [e.member_id for e in top.entries][:4] == ["player-07", "player-04", "player-01", "player-11"]

    # And memberCount, which the change stream keeps, is recorded right once it caught up
    def counted() -> None:
        newest = podium.snapshots(board, limit=1).snapshots[0]
        assert newest.member_count == len(members)

    eventually(counted, timeout=WAIT, interval=0.5)

    # And, once there are three, the listing pages with its cursor: the next page goes on
    # with older snapshots, though newer ones keep coming meanwhile
    eventually(lambda: _at_least(podium, board, 3), timeout=WAIT, interval=0.5)
    first = podium.snapshots(board, limit=2)
    assert first.next_cursor is not None
    second = podium.snapshots(board, limit=2, cursor=first.next_cursor)
    pages = [s.taken_at for s in first.snapshots + second.snapshots]
    assert len(pages) >= 3
    assert pages == sorted(pages, reverse=True)
    assert len(set(pages)) == len(pages)
    # And the client's iterator, two a page, walks every one of them once, newest first
    walked = [s.taken_at for s in podium.iter_snapshots(board, page_size=2)]
    assert walked == sorted(walked, reverse=True)
    assert len(set(walked)) == len(walked)
    assert set(pages) <= set(walked)


def _at_least(podium: PodiumClient, board: str, count: int) -> None:
    assert len(podium.snapshots(board, limit=100).snapshots) >= count


def test_snapshots_refuse_a_missing_board_and_bad_parameters(stack_url: str) -> None:
    missing = requests.get(f"{stack_url}/boards/{unique_id('nowhere')}/snapshots", timeout=TIMEOUT)
    assert missing.status_code == 404, missing.text
    assert missing.json()["code"] == "NotFound"

    board = unique_id("snapshots")
    requests.put(f"{stack_url}/boards/{board}", json={}, timeout=TIMEOUT).raise_for_status()
    for params, name in (({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"cursor": "nope"}, "cursor")):
        response = requests.get(f"{stack_url}/boards/{board}/snapshots", params=params, timeout=TIMEOUT)
        assert response.status_code == 400, response.text
        error = response.json()
        assert error["code"] == "ValidationError"
        assert name in error["message"]
