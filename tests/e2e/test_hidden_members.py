"""Hiding a member over HTTP, against the local stack (stream batches delivered twice):
a hidden member leaves every ranking (the index at once, the head, counts and leader as
the stream catches up), tells no rival of what it does meanwhile, and comes back exactly at
its current score."""

from __future__ import annotations

from decimal import Decimal

import pytest
import requests

from podium_client import NotFound, PodiumClient
from tests.e2e.test_access import Api, assert_status
from tests.helpers import assert_equal, eventually, unique_id
from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e

TIMEOUT = 30


def _listing(
    podium: PodiumClient, board: str, consistent: bool = False
) -> tuple[list[tuple[int, str, Decimal]], int]:
    page = podium.top(board, limit=10, consistent=consistent)
    return [(e.rank, e.member_id, e.score) for e in page.entries], page.total


def _rows(*rows: tuple[int, str, int]) -> list[tuple[int, str, Decimal]]:
    return [(rank, member, Decimal(score)) for rank, member, score in rows]


def _inbox(podium: PodiumClient, board: str, member: str) -> list[tuple[str, str | None]]:
    return [(n.type, n.by_member_id) for n in podium.notifications(board, member).notifications]


def test_a_hidden_member_leaves_every_ranking_and_comes_back_at_its_current_score(
    podium: PodiumClient,
) -> None:
    # Given cheat leads ana, bo and cy (the first leader: nobody is told), and ana and bo
    # follow cheat (and bo follows cy)
    board = unique_id("hiding")
    podium.create_board(board, shards=3)
    for member, score in (("cheat", 500), ("ana", 100), ("bo", 90), ("cy", 80)):
        podium.put_member(board, member, score=score)
    podium.put_rivals(board, "ana", ["cheat"])
    podium.put_rivals(board, "bo", ["cheat", "cy"])
    everyone = _rows((1, "cheat", 500), (2, "ana", 100), (3, "bo", 90), (4, "cy", 80))
    eventually(lambda: assert_equal(_listing(podium, board), (everyone, 4)))

    # When an admin hides cheat
    hidden = podium.put_member(board, "cheat", hidden=True)

    # Then the answer and GET say so, with its score kept
    assert (hidden.hidden, hidden.score) == (True, Decimal(500))
    got = podium.get_member(board, "cheat")
    assert (got.hidden, got.score) == (True, Decimal(500))
    assert podium.get_member(board, "ana").hidden is False
    # and the index leaves it out at once (total is memberCount: it follows the stream)
    shown = _rows((1, "ana", 100), (2, "bo", 90), (3, "cy", 80))
    assert _listing(podium, board, consistent=True)[0] == shown
    # and it has no rank, no window, and is left out of several ranks and of the windows
    with pytest.raises(NotFound):
        podium.rank(board, "cheat")
    with pytest.raises(NotFound):
        podium.around(board, "cheat")
    ranks = podium.ranks(board, ["cheat", "bo", "ana"])
    assert [(e.rank, e.member_id) for e in ranks] == [(1, "ana"), (2, "bo")]
    around = podium.around(board, "bo", radius=5)
    assert [(e.rank, e.member_id) for e in around.entries] == [(1, "ana"), (2, "bo"), (3, "cy")]
    band = podium.scores(board, min=85, max=1000)
    assert [(e.rank, e.member_id) for e in band.entries] == [(1, "ana"), (2, "bo")]
    # and within seconds the cached head, total, memberCount and ranks' totals follow (the
    # hide came before the stream had counted the first writes, so memberCount may pass 3 on
    # its way up to 4 before the hide takes it back: each is read until it says 3)
    eventually(lambda: assert_equal(_listing(podium, board), (shown, 3)))
    eventually(lambda: assert_equal(podium.get_board(board).member_count, 3))
    eventually(lambda: assert_equal(podium.rank(board, "ana").total, 3))
    # and the lead passed to ana, who is told; cheat, out of the rankings, is told nothing
    eventually(lambda: assert_equal(_inbox(podium, board, "ana"), [("newLeader", "cheat")]))

    # When cheat, hidden, falls behind everyone and then passes ana and bo, who follow it
    podium.put_member(board, "cheat", score=10)
    after = podium.submit_score(board, "cheat", 200)
    # and cy passes bo (bo is told: once bo hears it, the notifier has read cheat's changes)
    podium.submit_score(board, "cy", 15)

    # Then the submission was applied, unseen, and nobody heard of cheat's changes
    assert (after.member_id, after.score, after.previous_score) == ("cheat", Decimal(210), Decimal(10))
    eventually(lambda: assert_equal(_inbox(podium, board, "bo"), [("overtaken", "cy")]))
    assert _inbox(podium, board, "ana") == [("newLeader", "cheat")]
    assert _inbox(podium, board, "cheat") == []
    assert _listing(podium, board, consistent=True)[0] == _rows((1, "ana", 100), (2, "cy", 95), (3, "bo", 90))

    # When an admin shows cheat again
    back = podium.put_member(board, "cheat", hidden=False)

    # Then it is back at once at its current score, in the index and its own rank
    assert (back.hidden, back.score) == (False, Decimal(210))
    assert podium.get_member(board, "cheat").hidden is False
    again = _rows((1, "cheat", 210), (2, "ana", 100), (3, "cy", 95), (4, "bo", 90))
    assert _listing(podium, board, consistent=True)[0] == again
    assert podium.rank(board, "cheat", consistent=True).rank == 1
    # and the head, the counts and the tree-counted rank within seconds
    eventually(lambda: assert_equal(_listing(podium, board), (again, 4)))
    eventually(lambda: assert_equal(podium.get_board(board).member_count, 4))
    assert (podium.rank(board, "cheat").rank, podium.rank(board, "bo").rank) == (1, 4)
    # and it leads again: ana hears it
    eventually(
        lambda: assert_equal(_inbox(podium, board, "ana"), [("newLeader", "cheat"), ("newLeader", "cheat")])
    )


def test_hidden_must_be_a_boolean(stack_url: str, podium: PodiumClient) -> None:
    # Given a board with a member
    board = unique_id("hiding-400")
    base = f"{stack_url}/boards/{board}"
    podium.create_board(board)
    podium.put_member(board, "ana", score=1)

    # When hidden is sent as a string
    response = requests.put(f"{base}/members/ana", json={"hidden": "yes"}, timeout=TIMEOUT)

    # Then it is a 400 that names the field, and the member is unchanged
    assert response.status_code == 400
    assert response.json()["code"] == "ValidationError"
    assert "hidden" in response.json()["message"]
    assert podium.get_member(board, "ana").hidden is False


# -- whether a member is hidden is told to admins only ----------------------------------


def _same_as_missing(api: Api, path: str, token: str | None, hidden: str, missing: str) -> None:
    """GET ``path`` (with ``{member}`` in it) answers for the hidden member exactly what it
    answers for a member that does not exist: 404, the same code, the same message."""
    refused = assert_status(api.call("GET", path.format(member=hidden), token), 404, "NotFound")
    absent = assert_status(api.call("GET", path.format(member=missing), token), 404, "NotFound")
    assert refused["message"] == absent["message"].replace(missing, hidden), (path, refused, absent)
    assert "hidden" not in refused["message"]


@pytest.mark.parametrize("reset", ["never", "daily"])
def test_only_admins_learn_that_a_member_is_hidden(auth_stack: LocalStack, reset: str) -> None:
    # Given a public board that takes players' writes, where an admin hid cheat
    api = Api(auth_stack.url)
    board = api.board(publicRead=True, clientWrites=True, reset=reset)
    for member, score in (("cheat", 500), ("ana", 100)):
        assert_status(api.call("PUT", f"/boards/{board}/members/{member}", api.admin, {"score": score}), 201)
    assert_status(api.call("PUT", f"/boards/{board}/members/cheat", api.admin, {"hidden": True}), 200)
    ana, cheat = api.token("player", "ana"), api.token("player", "cheat")

    # When anyone but an admin asks for cheat's rank or window: anonymous, another player, itself
    for token in (None, ana, cheat):
        # Then each is the 404 of a member that does not exist, word for word
        for route in ("rank", "around"):
            _same_as_missing(api, f"/boards/{board}/members/{{member}}/{route}", token, "cheat", "ghost")

    # When players read a member, cheat or not, fresh or not, or cheat adds data to itself
    answers = [
        assert_status(api.call("GET", f"/boards/{board}/members/{member}{query}", token), 200)
        for token in (ana, cheat)
        for member in ("cheat", "ana")
        for query in ("", "?fresh=true")
    ]
    answers.append(
        assert_status(api.call("PUT", f"/boards/{board}/members/cheat", cheat, {"data": {"a": 1}}), 200)
    )

    # Then no answer carries hidden, and cheat's score is there as anyone's
    assert [answer.get("hidden", "absent") for answer in answers] == ["absent"] * len(answers)
    assert answers[0]["score"] == 500

    # And an admin learns it: GET shows hidden (true for cheat, false for ana), rank says so
    got = assert_status(api.call("GET", f"/boards/{board}/members/cheat", api.admin), 200)
    assert (got["hidden"], got["score"]) == (True, 500)
    fresh = assert_status(api.call("GET", f"/boards/{board}/members/cheat?fresh=true", api.admin), 200)
    assert fresh["hidden"] is True
    assert assert_status(api.call("GET", f"/boards/{board}/members/ana", api.admin), 200)["hidden"] is False
    told = assert_status(api.call("GET", f"/boards/{board}/members/cheat/rank", api.admin), 404, "NotFound")
    assert "hidden" in told["message"]
