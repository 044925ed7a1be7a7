"""``GET /boards/{boardId}/scores`` end to end over HTTP against the local stack: bands of a
board with ties, negative and decimal scores against a plain sorted list, paged with
cursors; the 400s (min above max, a bad decimal, a limit out of range, a cursor of
another band or route), 404, who may read it, and a period of a daily board."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
import requests

from tests.helpers import eventually, unique_id
from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e

TIMEOUT = 30
# Ties at the ends of the bands read below, negative and decimal scores among them.
SCORES = {
    "ana": Decimal("12.5"),
    "bo": Decimal("12.5"),
    "cy": Decimal(10),
    "di": Decimal("7.25"),
    "ed": Decimal("7.25"),
    "fay": Decimal("7.25"),
    "gus": Decimal(0),
    "hal": Decimal("-0.5"),
    "ivy": Decimal("-3"),
    "jo": Decimal("-3"),
}
Entry = tuple[int, str, Decimal]


def decimal_body(response: requests.Response) -> Any:
    """The body with every number an exact Decimal, as a client should read it."""
    return json.loads(response.text, parse_float=Decimal, parse_int=Decimal)


def sorted_list(scores: dict[str, Decimal], descending: bool) -> list[Entry]:
    """The listing by the API's rules for ``tieBreak: shared``: better first, ties by member
    id sharing the rank of 1 + the members strictly better."""
    sign = -1 if descending else 1
    ordered = sorted(scores, key=lambda m: (sign * scores[m], m))
    return [(1 + sum(sign * s < sign * scores[m] for s in scores.values()), m, scores[m]) for m in ordered]


def get(url: str, params: dict[str, Any] | None = None, token: str | None = None) -> requests.Response:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return requests.get(url, params=params, headers=headers, timeout=TIMEOUT)


def seeded(url: str, scores: dict[str, Decimal], **settings: Any) -> str:
    """A board with these members, once the stream has counted them (``total``)."""
    board = unique_id("band")
    assert requests.put(f"{url}/boards/{board}", json=settings, timeout=TIMEOUT).status_code == 201
    for member, score in scores.items():
        response = requests.put(
            f"{url}/boards/{board}/members/{member}",
            data=f'{{"score": {score}}}',  # the exact decimal, as JSON text
            headers={"Content-Type": "application/json"},
            timeout=TIMEOUT,
        )
        assert response.status_code == 201, response.text

    def counted() -> None:
        assert decimal_body(get(f"{url}/boards/{board}"))["memberCount"] == len(scores)

    eventually(counted)
    return board


def walk(url: str, board: str, params: dict[str, Any], limit: int) -> list[Entry]:
    """Every entry of a band, page after page through nextCursor, over HTTP."""
    found: list[Entry] = []
    cursor = None
    while True:
        response = get(f"{url}/boards/{board}/scores", {**params, "limit": limit, "cursor": cursor})
        assert response.status_code == 200, response.text
        body = decimal_body(response)
        assert set(body) == {"boardId", "entries", "total", "nextCursor"}
        assert body["boardId"] == board
        assert body["total"] == len(SCORES)
        found.extend((int(e["rank"]), e["memberId"], e["score"]) for e in body["entries"])
        cursor = body["nextCursor"]
        if cursor is None:
            return found
        assert len(body["entries"]) == limit


@pytest.mark.parametrize("order", ["desc", "asc"])
def test_bands_are_the_sorted_list_filtered_by_score(stack_url: str, order: str) -> None:
    # Given a board of ten members with ties, negative and decimal scores
    board = seeded(stack_url, SCORES, order=order, shards=3)
    listing = sorted_list(SCORES, descending=order == "desc")
    bands: list[dict[str, str]] = [
        {},
        {"min": "7.25"},
        {"max": "7.250"},
        {"min": "-3", "max": "7.25"},
        {"min": "-0.5", "max": "12.5"},
        {"min": "7.25", "max": "7.25"},
        {"min": "1", "max": "2"},
        {"min": "-2.99", "max": "9.999"},
    ]
    for band in bands:
        least = Decimal(band["min"]) if "min" in band else None
        most = Decimal(band["max"]) if "max" in band else None
        expected = [e for e in listing if (least is None or e[2] >= least) and (most is None or e[2] <= most)]
        for limit in (1, 2, 1000):
            # When the band is read page by page, then it is the sorted list's entries in it
            assert walk(stack_url, board, band, limit) == expected, (band, limit)


def test_a_bad_request_is_400_naming_what_was_wrong(stack_url: str) -> None:
    # Given a board, a cursor of one of its bands and one of its top
    board = seeded(stack_url, SCORES)
    url = f"{stack_url}/boards/{board}/scores"
    band_cursor = decimal_body(get(url, {"min": 0, "max": 12.5, "limit": 2}))["nextCursor"]
    top_cursor = decimal_body(get(f"{stack_url}/boards/{board}/top", {"limit": 2}))["nextCursor"]
    assert isinstance(band_cursor, str)
    assert isinstance(top_cursor, str)
    cases = [
        ({"min": "10", "max": "9.5"}, "min"),
        ({"min": "ten"}, "min"),
        ({"max": "1e30"}, "max"),
        ({"max": "NaN"}, "max"),
        ({"min": "1" * 39}, "min"),
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"min": "0", "max": "12", "cursor": band_cursor}, "cursor"),
        ({"cursor": top_cursor}, "cursor"),
        ({"min": "0", "max": "12.5", "cursor": band_cursor[:-2]}, "cursor"),
    ]
    for params, named in cases:
        # When the band is asked for with it, then it is 400 with a message that names it
        response = get(url, params)
        assert response.status_code == 400, (params, response.text)
        body = response.json()
        assert body["code"] == "ValidationError"
        assert named in body["message"], (params, body)
    # and a board that does not exist is 404
    response = get(f"{stack_url}/boards/{unique_id('none')}/scores")
    assert response.status_code == 404
    assert response.json()["code"] == "NotFound"


def test_a_band_of_a_period(stack_url: str, set_clock: Any) -> None:
    # Given a daily board: ana 5 and bo 3 on 2026-12-10, then bo 8 and cy 4 on the 11th
    set_clock("2026-12-10T12:00:00Z")
    board = unique_id("band-day")
    body = {"reset": "daily", "operator": "set"}
    assert requests.put(f"{stack_url}/boards/{board}", json=body, timeout=TIMEOUT).status_code == 201

    def score(member: str, value: int) -> None:
        member_url = f"{stack_url}/boards/{board}/members/{member}"
        requests.put(member_url, json={}, timeout=TIMEOUT)
        response = requests.post(f"{member_url}/score", json={"value": value}, timeout=TIMEOUT)
        assert response.status_code == 200, response.text

    score("ana", 5)
    score("bo", 3)
    set_clock("2026-12-11T12:00:00Z")
    score("bo", 8)
    score("cy", 4)

    # When the band 3..6 is read in each period
    def band(period: str) -> list[tuple[int, str]]:
        response = get(f"{stack_url}/boards/{board}/scores", {"min": 3, "max": 6, "period": period})
        assert response.status_code == 200, response.text
        return [(e["rank"], e["memberId"]) for e in response.json()["entries"]]

    # Then each period's band holds its own scores, ranked within that period
    assert band("2026-12-10") == [(1, "ana"), (2, "bo")]
    assert band("previous") == [(1, "ana"), (2, "bo")]
    assert band("current") == [(2, "cy")]
    assert get(f"{stack_url}/boards/{board}/scores", {"period": "2026-W50"}).status_code == 400


def token(stack: LocalStack, role: str, member: str | None = None) -> str:
    body = {"role": role, **({"memberId": member} if member else {})}
    response = requests.post(f"{stack.url}/_local/token", json=body, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    found: str = response.json()["token"]
    return found


def test_who_may_read_a_band(auth_stack: LocalStack) -> None:
    # Given a private board and a publicly readable one, each with two members
    admin = token(auth_stack, "admin")
    boards = {}
    for public in (False, True):
        board = unique_id("band-acl")
        created = requests.put(
            f"{auth_stack.url}/boards/{board}",
            json={"publicRead": public},
            headers={"Authorization": f"Bearer {admin}"},
            timeout=TIMEOUT,
        )
        assert created.status_code == 201, created.text
        for member, value in (("alice", 3), ("bob", 9)):
            requests.put(
                f"{auth_stack.url}/boards/{board}/members/{member}",
                json={"score": value},
                headers={"Authorization": f"Bearer {admin}"},
                timeout=TIMEOUT,
            )
        boards[public] = f"{auth_stack.url}/boards/{board}/scores"
    player = token(auth_stack, "player", "alice")
    band = {"min": 1, "max": 5}

    # When each is read without a token, as a player and as an admin
    # Then the private board is 401 without a token, and every other read answers the band
    assert get(boards[False], band).status_code == 401
    assert get(boards[False], band).json()["code"] == "Unauthorized"
    for url, caller in (
        (boards[True], None),
        (boards[False], player),
        (boards[True], player),
        (boards[False], admin),
    ):
        response = get(url, band, caller)
        assert response.status_code == 200, response.text
        assert [(e["rank"], e["memberId"]) for e in response.json()["entries"]] == [(2, "alice")]
