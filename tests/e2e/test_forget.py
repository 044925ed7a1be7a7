"""Deleting a member over HTTP: the member added again starts afresh (its score, rivals,
inbox and its place in a follower's list are gone), and writes racing the delete never
leave a ranked member that GET cannot see. The local stack delivers every stream batch
twice, so the notifier's forgetting runs twice too."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest

from podium_client import NotFound, PodiumClient
from tests.helpers import eventually, unique_id

pytestmark = pytest.mark.e2e

ROUNDS = 15


def _inbox(podium: PodiumClient, board: str, member: str) -> list[tuple[str, str | None]]:
    return [(n.type, n.by_member_id) for n in podium.iter_notifications(board, member)]


def _listing(podium: PodiumClient, board: str) -> dict[str, Decimal]:
    """The board's members and scores, read from the ranking index (consistent=true)."""
    return {e.member_id: e.score for e in podium.top(board, consistent=True, limit=100).entries}


def test_a_member_added_again_starts_afresh(podium: PodiumClient) -> None:
    # Given ana (50), who follows bo and has been told that bo passed her; cy follows ana;
    # zed leads far ahead
    board = unique_id("forget")
    podium.create_board(board, shards=3)
    for member, score in (("zed", 1000), ("ana", 50), ("bo", 40), ("cy", 10)):
        podium.put_member(board, member, score=score)
    podium.put_rivals(board, "ana", ["bo"])
    podium.put_rivals(board, "cy", ["ana"])
    podium.submit_score(board, "bo", 15)

    def told() -> None:
        assert _inbox(podium, board, "ana") == [("overtaken", "bo")]

    eventually(told)

    # When ana is deleted (twice: a retried delete) and added again at once
    podium.delete_member(board, "ana")
    podium.delete_member(board, "ana")
    again = podium.put_member(board, "ana")

    # Then it is a new member: score 0, no rivals, an empty inbox, ranked last by its new score
    assert again.created
    assert podium.get_member(board, "ana").score == 0
    assert podium.get_rivals(board, "ana") == ()
    assert _inbox(podium, board, "ana") == []
    rank = podium.rank(board, "ana")
    assert (rank.rank, rank.score) == (4, Decimal(0))
    assert _listing(podium, board) == {"zed": 1000, "bo": 55, "cy": 10, "ana": 0}

    # And, once the stream has run, cy no longer follows it, and the board counts 4 members
    def forgotten() -> None:
        assert podium.get_rivals(board, "cy") == ()
        assert podium.get_board(board).member_count == 4

    eventually(forgotten)
    assert _inbox(podium, board, "ana") == []


def _outcome(write: Callable[[], object]) -> str:
    """What a write came to: "done", or "404" when it found the member gone."""
    try:
        write()
    except NotFound:
        return "404"
    return "done"


def test_writes_racing_a_delete_never_leave_a_ranked_member_get_cannot_see(podium: PodiumClient) -> None:
    # Given a board with one member that stays, and one that is written and deleted at once
    # (each submission carries its Idempotency-Key, as the client sends it)
    board = unique_id("forget-race")
    podium.create_board(board, shards=4)
    podium.put_member(board, "stays", score=5)

    def put() -> str:
        return _outcome(lambda: podium.put_member(board, "racer", score=10))

    def submit() -> str:
        return _outcome(lambda: podium.submit_score(board, "racer", 1))

    def delete() -> str:
        return _outcome(lambda: podium.delete_member(board, "racer"))

    present = False
    with ThreadPoolExecutor(max_workers=5) as pool:
        for _ in range(ROUNDS):
            podium.put_member(board, "racer", score=10)
            # When a PUT with a score, score submissions and a DELETE race each other
            futures = {name: pool.submit(f) for name, f in (("put", put), ("delete", delete))}
            futures |= {f"submit{i}": pool.submit(submit) for i in range(3)}
            outcomes = {name: future.result() for name, future in futures.items()}

            # Then each answered what the contract allows: the delete and the PUT succeed
            # (a PUT adds the member again), a submission is applied or finds it gone
            assert outcomes["delete"] == "done"
            assert outcomes["put"] == "done", outcomes
            assert all(outcomes[f"submit{i}"] in ("done", "404") for i in range(3)), outcomes

            # And either GET sees the member and it is ranked with that score, or GET is
            # 404 and no ranking shows it
            try:
                score: Decimal | None = podium.get_member(board, "racer").score
                present = True
            except NotFound:
                score, present = None, False
            listed = _listing(podium, board)
            if present:
                assert podium.rank(board, "racer").score == score
                assert listed == {"stays": 5, "racer": score}
            else:
                with pytest.raises(NotFound):
                    podium.rank(board, "racer")
                assert listed == {"stays": 5}

    # And once the stream settles, the counts agree with what GET sees
    expected = 2 if present else 1

    def counted() -> None:
        assert podium.get_board(board).member_count == expected
        assert podium.rank(board, "stays").total == expected

    eventually(counted)
