"""Answers checked from outside against the contract, each once wrong: ranks on a page
after a cursor when the board changed in between, a late stream change judged as of its
moment, a ``#`` in a member id, and integers too large to convert.

Over HTTP against the local stack, with the listing read fresh as the model.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import pytest
import requests

from tests.helpers import decimal_json, eventually, unique_id

pytestmark = pytest.mark.e2e

TIMEOUT = 30


def _put(url: str, body: Any) -> Any:
    response = requests.put(url, json=body, timeout=TIMEOUT)
    assert response.status_code in (200, 201), response.text
    return decimal_json(response)


def _score(url: str, value: Any) -> None:
    response = requests.post(url, data=f'{{"value": {value}}}', timeout=TIMEOUT)
    assert response.status_code == 200, response.text


def _get(url: str, **params: Any) -> Any:
    response = requests.get(url, params=params, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return decimal_json(response)


def _full_listing(stack_url: str, board: str) -> dict[str, int]:
    """memberId -> rank over the whole board, read from the index in one page."""
    page = _get(f"{stack_url}/boards/{board}/top", limit=1000, consistent="true")
    assert page["nextCursor"] is None
    return {entry["memberId"]: entry["rank"] for entry in page["entries"]}


# -- 1. a page after a cursor shows the ranks of the board as it is now -------------------


@pytest.mark.parametrize("tie_break", ["shared", "earliest"])
@pytest.mark.parametrize("consistent", ["true", "false"])
def test_a_page_after_a_cursor_ranks_the_board_as_it_is_when_read(
    stack_url: str, tie_break: str, consistent: str
) -> None:
    # Given a set-board of 20 members scored i // 2 (pairs of ties) on 5 shards
    board = unique_id("cursor-ranks")
    _put(f"{stack_url}/boards/{board}", {"operator": "set", "shards": 5, "tieBreak": tie_break})
    for i in range(20):
        _put(f"{stack_url}/boards/{board}/members/c{i}", {"score": i // 2})
    first = _get(f"{stack_url}/boards/{board}/top", limit=6, consistent="true")
    expected_first = [1, 1, 3, 3, 5, 5] if tie_break == "shared" else [1, 2, 3, 4, 5, 6]
    assert [e["rank"] for e in first["entries"]] == expected_first

    # When a member arrives above the cursor, and the next pages are read with the cursors
    _put(f"{stack_url}/boards/{board}/members/zz-top", {"score": 100})
    pages = []
    cursor = first["nextCursor"]
    while cursor is not None:
        page = _get(f"{stack_url}/boards/{board}/top", limit=6, cursor=cursor, consistent=consistent)
        pages.append(page)
        cursor = page["nextCursor"]

    # Then every entry has its board-wide rank as the board is now (the listing says so)
    now = _full_listing(stack_url, board)
    assert (pages[0]["entries"][0]["memberId"], pages[0]["entries"][0]["rank"]) == ("c12", 8)
    for page in pages:
        for entry in page["entries"]:
            assert entry["rank"] == now[entry["memberId"]], entry
    # and the pages after the cursor hold the members the first page did not
    seen = [e["memberId"] for e in first["entries"]] + [e["memberId"] for p in pages for e in p["entries"]]
    assert sorted(seen) == sorted(f"c{i}" for i in range(20))


def test_a_cursor_inside_a_tie_keeps_the_ties_rank_when_members_arrive_above(stack_url: str) -> None:
    # Given 9 members tied at 5 below one at 10, read 4 at a time (the cursor inside the tie)
    board = unique_id("cursor-tie")
    _put(f"{stack_url}/boards/{board}", {"operator": "set", "shards": 3})
    _put(f"{stack_url}/boards/{board}/members/lead", {"score": 10})
    for i in range(9):
        _put(f"{stack_url}/boards/{board}/members/t{i}", {"score": 5})
    first = _get(f"{stack_url}/boards/{board}/top", limit=4, consistent="true")
    assert [e["rank"] for e in first["entries"]] == [1, 2, 2, 2]

    # When two members arrive above the tie and one tied member leaves it downwards
    _put(f"{stack_url}/boards/{board}/members/a-new", {"score": 7})
    _put(f"{stack_url}/boards/{board}/members/b-new", {"score": 6})
    _put(f"{stack_url}/boards/{board}/members/t8", {"score": 1})
    page = _get(f"{stack_url}/boards/{board}/top", limit=4, cursor=first["nextCursor"])

    # Then the rest of the tie shares the tie's rank now, and t8 is ranked last
    now = _full_listing(stack_url, board)
    assert now["t3"] == 4
    assert [(e["memberId"], e["rank"]) for e in page["entries"]] == [
        (member, now[member]) for member in ("t3", "t4", "t5", "t6")
    ]
    assert all(e["rank"] == 4 for e in page["entries"])


# -- 2. a late change is judged by who followed whom, and their scores, at its moment ------


def _pause_notifier(stack_url: str, paused: bool) -> None:
    response = requests.put(
        f"{stack_url}/_devstack/streams/NotifierFunction", json={"paused": paused}, timeout=TIMEOUT
    )
    assert response.status_code == 200, response.text


def _inbox(stack_url: str, board: str, member: str) -> list[dict[str, Any]]:
    """The member's ``overtaken`` notifications (leaders change in these stories too)."""
    found = _get(f"{stack_url}/boards/{board}/members/{member}/notifications")["notifications"]
    return [n for n in found if n["type"] == "overtaken"]


def _told_once_read(stack_url: str, board: str, member: str, *, by_score: int) -> list[tuple[Any, ...]]:
    """The member's overtaken notifications, as (by, score, byScore), once the notifier has
    read the change that made one with ``by_score``."""

    def told() -> list[tuple[Any, ...]]:
        inbox = _inbox(stack_url, board, member)
        assert any(n["byScore"] == by_score for n in inbox)
        return [(n["byMemberId"], n["score"], n["byScore"]) for n in inbox]

    return eventually(told)


def test_a_rivals_change_read_late_is_judged_as_of_its_moment(stack_url: str) -> None:
    # Given a notifier that falls behind the writes (its stream records wait)
    board = unique_id("late-rival")
    _put(f"{stack_url}/boards/{board}", {"operator": "set"})
    _pause_notifier(stack_url, True)
    try:
        # When m is added at 100, then t at 40, t starts following m, t moves to 95 (still
        # behind m), and later m drops to 94 and climbs to 150
        _put(f"{stack_url}/boards/{board}/members/m", {"score": 100})
        _put(f"{stack_url}/boards/{board}/members/t", {"score": 40})
        _put(f"{stack_url}/boards/{board}/members/t/rivals", {"memberIds": ["m"]})
        _score(f"{stack_url}/boards/{board}/members/t/score", 95)
        _score(f"{stack_url}/boards/{board}/members/m/score", 94)
        _score(f"{stack_url}/boards/{board}/members/m/score", 150)
    finally:
        _pause_notifier(stack_url, False)

    # Then t is told once: m passed its 95 with 150. Not when m was added (t did not follow
    # m then, nor exist), and not when m dropped to 94 (still above t's 95 of that moment)
    assert _told_once_read(stack_url, board, "t", by_score=150) == [("m", Decimal(95), Decimal(150))]


def test_a_follow_that_ended_after_the_change_still_counts_for_it(stack_url: str) -> None:
    # Given ana (and cy, at 65) following bo while the notifier falls behind
    board = unique_id("ended-follow")
    _put(f"{stack_url}/boards/{board}", {"operator": "set"})
    _put(f"{stack_url}/boards/{board}/members/ana", {"score": 50})
    _put(f"{stack_url}/boards/{board}/members/bo", {"score": 10})
    _put(f"{stack_url}/boards/{board}/members/cy", {"score": 65})
    _put(f"{stack_url}/boards/{board}/members/ana/rivals", {"memberIds": ["bo"]})
    _put(f"{stack_url}/boards/{board}/members/cy/rivals", {"memberIds": ["bo"]})
    _pause_notifier(stack_url, True)
    try:
        # When bo passes ana, then ana stops following bo and moves to 500, all before the
        # notifier reads bo's change
        _score(f"{stack_url}/boards/{board}/members/bo/score", 60)
        _put(f"{stack_url}/boards/{board}/members/ana/rivals", {"memberIds": []})
        _score(f"{stack_url}/boards/{board}/members/ana/score", 500)
        _score(f"{stack_url}/boards/{board}/members/bo/score", 70)
    finally:
        _pause_notifier(stack_url, False)

    # Then ana is told that bo passed her 50 (she followed bo, at 50, when it happened), and
    # nothing of bo's later move (she no longer followed, and 70 is not above 500)
    assert _told_once_read(stack_url, board, "ana", by_score=60) == [("bo", Decimal(50), Decimal(60))]
    # and once the notifier has read bo's last change (it passed cy's 65), still only that
    assert _told_once_read(stack_url, board, "cy", by_score=70) == [("bo", Decimal(65), Decimal(70))]
    assert len(_inbox(stack_url, board, "ana")) == 1


# -- 3. a "#" or "/" escaped in a member id is refused, not routed elsewhere --------------


@pytest.mark.parametrize("escaped", ["a%23b", "a%2Fb", "%23", "a%20b"])
@pytest.mark.parametrize("method", ["PUT", "GET", "DELETE"])
def test_an_escaped_character_not_allowed_in_a_member_id_is_400(
    stack_url: str, escaped: str, method: str
) -> None:
    board = unique_id("escaped")
    _put(f"{stack_url}/boards/{board}", {})
    response = requests.request(
        method, f"{stack_url}/boards/{board}/members/{escaped}", json={}, timeout=TIMEOUT
    )
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["code"] == "ValidationError"
    assert "memberId" in body["message"]
    # and nothing was created under any spelling of it
    listing = _get(f"{stack_url}/boards/{board}/top", consistent="true")
    assert listing["entries"] == []


def test_an_escaped_allowed_character_is_the_character(stack_url: str) -> None:
    # "%40" is "@", which a member id may hold: the same member as the plain spelling
    board = unique_id("escaped-ok")
    _put(f"{stack_url}/boards/{board}", {})
    url = f"{stack_url}/boards/{board}/members/ana%40home"
    created = requests.put(url, json={"score": 3}, timeout=TIMEOUT)
    assert created.status_code == 201, created.text
    assert _get(f"{stack_url}/boards/{board}/members/ana@home")["score"] == 3


# -- 4. an integer too large to convert is refused at once, and blocks no one -------------


@pytest.mark.parametrize("field", ["shards", "retainPeriods"])
@pytest.mark.parametrize("number", ["1e999999999", "1E1000000", "-1e999999999", "1e-999999999"])
def test_a_huge_integer_setting_is_400_naming_the_field(stack_url: str, field: str, number: str) -> None:
    board = unique_id("huge")
    body = f'{{"{field}": {number}}}'
    if field == "retainPeriods":
        body = f'{{"reset": "daily", "{field}": {number}}}'

    # When the request is sent while another client reads, each with a time-out far below
    # what converting such a number takes (seconds to forever)
    with ThreadPoolExecutor(max_workers=2) as pool:
        huge = pool.submit(
            requests.put,
            f"{stack_url}/boards/{board}",
            data=body,
            headers={"Content-Type": "application/json"},
            timeout=10,
        )
        other = pool.submit(requests.get, f"{stack_url}/boards", timeout=10)
        answer, reader = huge.result(), other.result()

    # Then it is refused, naming the field and its range, and the other client was served
    assert answer.status_code == 400, answer.text
    assert answer.json()["code"] == "ValidationError"
    assert field in answer.json()["message"]
    assert reader.status_code == 200
    assert requests.get(f"{stack_url}/boards/{board}", timeout=TIMEOUT).status_code == 404
