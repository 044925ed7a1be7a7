"""A player's events count toward its board's ``maxSubmissionsPerMinute``, as its score
submissions do, on a local stack that checks tokens: a batch that would pass the limit is
refused whole and logs nothing; an admin's events (a game server counting views) do not
count."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.test_access import Api, assert_status, set_clock
from tests.helpers import assert_equal, decimal_json, eventually, unique_id
from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def api(auth_stack: LocalStack) -> Api:
    return Api(auth_stack.url)


def _events(member: str, count: int, value: int = 5, ids: bool = True) -> dict[str, Any]:
    tag = unique_id("ev")
    return {
        "events": [
            {"memberId": member, "value": value, **({"eventId": f"{tag}-{i}"} if ids else {})}
            for i in range(count)
        ]
    }


def _fresh(api: Api, board: str, member: str) -> tuple[Any, Any]:
    body = decimal_json(api.call("GET", f"/boards/{board}/members/{member}?fresh=true", api.admin))
    return body["score"], body["pendingEvents"]


def test_a_players_events_count_toward_the_limit_and_an_admins_do_not(api: Api) -> None:
    # Given an increment board that takes players' writes, at most 5 a value and 30
    # submissions a member a minute, with alice at 0 and her token
    board = api.board(
        operator="increment", clientWrites=True, limits={"maxValue": 5, "maxSubmissionsPerMinute": 30}
    )
    api.member(board, "alice")
    alice = api.token("player", "alice")
    events = f"/boards/{board}/events"
    try:
        set_clock(api, "2031-03-03T10:00:05Z")

        # When an admin posts 40 of her events (a game server): more than the limit, accepted
        assert_status(api.call("POST", events, api.admin, _events("alice", 40, value=1)), 202)

        # And alice posts 25 of her own in batches (with ids and without)
        for count, ids in ((10, True), (10, False), (5, True)):
            assert_status(api.call("POST", events, alice, _events("alice", count, ids=ids)), 202)

        # Then a batch of 10, which would pass 30, is 429 whole, with Retry-After to the minute's end
        refused = api.call("POST", events, alice, _events("alice", 10))
        body = assert_status(refused, 429, "RateLimited")
        assert refused.headers["Retry-After"] == "55"
        assert "limits.maxSubmissionsPerMinute" in body["message"]

        # And the 5 left pass (the refused batch used none of them), and then nothing more does:
        # not one event, nor a score submission
        assert_status(api.call("POST", events, alice, _events("alice", 5)), 202)
        assert_status(api.call("POST", events, alice, _events("alice", 1)), 429, "RateLimited")
        score = f"/boards/{board}/members/alice/score"
        assert_status(api.call("POST", score, alice, {"value": 1}), 429, "RateLimited")

        # And the admin's events are still taken
        assert_status(api.call("POST", events, api.admin, _events("alice", 10, value=1)), 202)

        # And what was refused logged nothing: the score, folded, is the admin's 50 and her 30 x 5
        eventually(lambda: assert_equal(_fresh(api, board, "alice"), (200, 0)))
        assert api.score(board, "alice") == 200

        # When the next minute starts, she may post again
        set_clock(api, "2031-03-03T10:01:00Z")
        assert_status(api.call("POST", events, alice, _events("alice", 30, value=1)), 202)
        assert_status(api.call("POST", events, alice, _events("alice", 1)), 429, "RateLimited")
        eventually(lambda: assert_equal(_fresh(api, board, "alice"), (230, 0)))
    finally:
        set_clock(api, None)


def test_a_batch_larger_than_the_limit_is_refused_whole(api: Api) -> None:
    # Given a board that allows 3 submissions a member a minute, and bob's token
    board = api.board(operator="increment", clientWrites=True, limits={"maxSubmissionsPerMinute": 3})
    api.member(board, "bob")
    bob = api.token("player", "bob")

    # When bob posts 4 events at once
    refused = api.call("POST", f"/boards/{board}/events", bob, _events("bob", 4))

    # Then it is 429 naming the limit, nothing is logged, and his 3 are still his
    body = assert_status(refused, 429, "RateLimited")
    assert "limits.maxSubmissionsPerMinute" in body["message"]
    assert int(refused.headers["Retry-After"]) >= 1
    assert _fresh(api, board, "bob") == (0, 0)
    assert_status(api.call("POST", f"/boards/{board}/events", bob, _events("bob", 3)), 202)


def test_a_player_cannot_use_up_the_event_ids_of_another(api: Api) -> None:
    # Given an increment board that takes players' writes, and two players on it
    board = api.board(operator="increment", clientWrites=True)
    for member in ("alice", "mallory"):
        api.member(board, member)
    mallory, alice = api.token("player", "mallory"), api.token("player", "alice")
    events = f"/boards/{board}/events"

    # When mallory posts her own events with the ids alice's game will use
    taken = {"events": [{"memberId": "mallory", "value": 1, "eventId": f"match-{i}"} for i in range(3)]}
    assert_status(api.call("POST", events, mallory, taken), 202)

    # And alice then posts hers with those ids, one of them twice
    ids = ["match-0", "match-1", "match-2", "match-2"]
    hers = {"events": [{"memberId": "alice", "value": 5, "eventId": i} for i in ids]}
    assert_status(api.call("POST", events, alice, hers), 202)

    # Then each counts its own events once: alice's three ids are hers, whatever mallory sent
    eventually(lambda: assert_equal(_fresh(api, board, "alice"), (15, 0)))
    eventually(lambda: assert_equal(_fresh(api, board, "mallory"), (3, 0)))
