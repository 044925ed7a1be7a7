"""Hiding a member over HTTP, against the local stack (stream batches delivered twice):
a hidden member leaves every ranking (the index at once, the head, counts and leader as
the stream catches up), tells no rival of what it does meanwhile, and comes back exactly at
its current score."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
import requests

from podium import numbers
from tests.helpers import assert_equal, decimal_json, eventually, unique_id

pytestmark = pytest.mark.e2e

TIMEOUT = 30


def _call(method: str, url: str, body: Any = None, status: tuple[int, ...] = (200, 201)) -> Any:
    data = numbers.dumps(body) if body is not None else None
    response = requests.request(method, url, data=data, timeout=TIMEOUT)
    assert response.status_code in status, response.text
    return decimal_json(response)


def _listing(base: str, query: str = "") -> tuple[list[tuple[int, str, Decimal]], Decimal]:
    page = _call("GET", f"{base}/top?limit=10{query}")
    return [(e["rank"], e["memberId"], e["score"]) for e in page["entries"]], page["total"]


def _rows(*rows: tuple[int, str, int]) -> list[tuple[int, str, Decimal]]:
    return [(rank, member, Decimal(score)) for rank, member, score in rows]


def _inbox(base: str, member: str) -> list[tuple[str, str]]:
    body = _call("GET", f"{base}/members/{member}/notifications")
    return [(n["type"], n["byMemberId"]) for n in body["notifications"]]


def test_a_hidden_member_leaves_every_ranking_and_comes_back_at_its_current_score(stack_url: str) -> None:
    # Given cheat leads ana, bo and cy (the first leader: nobody is told), and ana and bo
    # follow cheat (and bo follows cy)
    board = unique_id("hiding")
    base = f"{stack_url}/boards/{board}"
    _call("PUT", base, {"shards": 3})
    for member, score in (("cheat", 500), ("ana", 100), ("bo", 90), ("cy", 80)):
        _call("PUT", f"{base}/members/{member}", {"score": score})
    _call("PUT", f"{base}/members/ana/rivals", {"memberIds": ["cheat"]})
    _call("PUT", f"{base}/members/bo/rivals", {"memberIds": ["cheat", "cy"]})
    everyone = _rows((1, "cheat", 500), (2, "ana", 100), (3, "bo", 90), (4, "cy", 80))
    eventually(lambda: assert_equal(_listing(base), (everyone, 4)))

    # When an admin hides cheat
    hidden = _call("PUT", f"{base}/members/cheat", {"hidden": True})

    # Then the answer and GET say so, with its score kept
    assert (hidden["hidden"], hidden["score"]) == (True, 500)
    got = _call("GET", f"{base}/members/cheat")
    assert (got["hidden"], got["score"]) == (True, 500)
    assert _call("GET", f"{base}/members/ana")["hidden"] is False
    # and the index leaves it out at once (total is memberCount: it follows the stream)
    shown = _rows((1, "ana", 100), (2, "bo", 90), (3, "cy", 80))
    assert _listing(base, "&consistent=true")[0] == shown
    # and it has no rank, no window, and is left out of several ranks and of the windows
    assert requests.get(f"{base}/members/cheat/rank", timeout=TIMEOUT).status_code == 404
    assert requests.get(f"{base}/members/cheat/around", timeout=TIMEOUT).status_code == 404
    ranks = _call("POST", f"{base}/ranks", {"memberIds": ["cheat", "bo", "ana"]})
    assert [(e["rank"], e["memberId"]) for e in ranks["entries"]] == [(1, "ana"), (2, "bo")]
    around = _call("GET", f"{base}/members/bo/around?radius=5")
    assert [(e["rank"], e["memberId"]) for e in around["entries"]] == [(1, "ana"), (2, "bo"), (3, "cy")]
    # and within seconds the cached head, total, memberCount and ranks' totals follow (the
    # hide came before the stream had counted the first writes, so memberCount may pass 3 on
    # its way up to 4 before the hide takes it back: each is read until it says 3)
    eventually(lambda: assert_equal(_listing(base), (shown, 3)))
    eventually(lambda: assert_equal(_call("GET", base)["memberCount"], 3))
    eventually(lambda: assert_equal(_call("GET", f"{base}/members/ana/rank")["total"], 3))
    # and the lead passed to ana, who is told; cheat, out of the rankings, is told nothing
    eventually(lambda: assert_equal(_inbox(base, "ana"), [("newLeader", "cheat")]))

    # When cheat, hidden, falls behind everyone and then passes ana and bo, who follow it
    _call("PUT", f"{base}/members/cheat", {"score": 10})
    after = _call("POST", f"{base}/members/cheat/score", {"value": 200})
    # and cy passes bo (bo is told: once bo hears it, the notifier has read cheat's changes)
    _call("POST", f"{base}/members/cy/score", {"value": 15})

    # Then the submission was applied, unseen, and nobody heard of cheat's changes
    assert after == {"memberId": "cheat", "score": 210, "previousScore": 10}
    eventually(lambda: assert_equal(_inbox(base, "bo"), [("overtaken", "cy")]))
    assert _inbox(base, "ana") == [("newLeader", "cheat")]
    assert _inbox(base, "cheat") == []
    assert _listing(base, "&consistent=true")[0] == _rows((1, "ana", 100), (2, "cy", 95), (3, "bo", 90))

    # When an admin shows cheat again
    back = _call("PUT", f"{base}/members/cheat", {"hidden": False})

    # Then it is back at once at its current score, in the index and its own rank
    assert (back["hidden"], back["score"]) == (False, 210)
    assert _call("GET", f"{base}/members/cheat")["hidden"] is False
    again = _rows((1, "cheat", 210), (2, "ana", 100), (3, "cy", 95), (4, "bo", 90))
    assert _listing(base, "&consistent=true")[0] == again
    assert _call("GET", f"{base}/members/cheat/rank?consistent=true")["rank"] == 1
    # and the head, the counts and the bucket-counted rank within seconds
    eventually(lambda: assert_equal(_listing(base), (again, 4)))
    eventually(lambda: assert_equal(_call("GET", base)["memberCount"], 4))
    assert (
        _call("GET", f"{base}/members/cheat/rank")["rank"],
        _call("GET", f"{base}/members/bo/rank")["rank"],
    ) == (
        1,
        4,
    )
    # and it leads again: ana hears it
    eventually(lambda: assert_equal(_inbox(base, "ana"), [("newLeader", "cheat"), ("newLeader", "cheat")]))


def test_hidden_must_be_a_boolean(stack_url: str) -> None:
    # Given a board with a member
    board = unique_id("hiding-400")
    base = f"{stack_url}/boards/{board}"
    _call("PUT", base, {})
    _call("PUT", f"{base}/members/ana", {"score": 1})

    # When hidden is sent as a string
    response = requests.put(f"{base}/members/ana", json={"hidden": "yes"}, timeout=TIMEOUT)

    # Then it is a 400 that names the field, and the member is unchanged
    assert response.status_code == 400
    assert response.json()["code"] == "ValidationError"
    assert "hidden" in response.json()["message"]
    assert _call("GET", f"{base}/members/ana")["hidden"] is False
