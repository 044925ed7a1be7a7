"""Conditional reads over HTTP (podium.http): a GET's 200 carries a strong ETag and
``Cache-Control: no-cache``; asked again with ``If-None-Match``, an unchanged answer is a
304 with no body, and a changed one a 200 with the new body under a new tag. The board's
head and memberCount follow writes through the stream (about a second, at most 2 s once
writes stop), so "unchanged" and "changed" are each waited for, not timed.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest
import requests

from tests.helpers import decimal_json, eventually, unique_id

pytestmark = pytest.mark.e2e

TIMEOUT = 30
SCORES = {"m1": 40, "m2": 30, "m3": 20, "m4": 10}
# The reads of one board that a score change moves, each with what shows the change.
READS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "board": ("", lambda body: body["memberCount"]),
    "top": ("/top?limit=3", lambda body: [entry["memberId"] for entry in body["entries"]]),
    "rank": ("/members/m2/rank", lambda body: body["rank"]),
    "around": (
        "/members/m2/around?radius=1",
        lambda body: [(e["rank"], e["memberId"]) for e in body["entries"]],
    ),
    "scores": ("/scores?min=15&max=35", lambda body: [(e["rank"], e["memberId"]) for e in body["entries"]]),
}


def seeded_board(stack_url: str) -> str:
    board = unique_id("etag")
    assert requests.put(f"{stack_url}/boards/{board}", json={"shards": 2}, timeout=TIMEOUT).status_code == 201
    for member, score in SCORES.items():
        response = requests.put(
            f"{stack_url}/boards/{board}/members/{member}", json={"score": score}, timeout=TIMEOUT
        )
        assert response.status_code == 201, response.text
    eventually(lambda: assert_settled(stack_url, board, len(SCORES)))
    return board


def assert_settled(stack_url: str, board: str, members: int) -> None:
    """The stream has applied the writes: the board counts its members, and the head (which
    top reads) holds the listing."""
    counted = decimal_json(get(f"{stack_url}/boards/{board}"))["memberCount"]
    top = decimal_json(get(f"{stack_url}/boards/{board}/top?limit=10"))
    assert counted == members
    assert (top["total"], len(top["entries"])) == (members, members)


def get(url: str, tag: str | None = None) -> requests.Response:
    return requests.get(url, headers={"If-None-Match": tag} if tag else {}, timeout=TIMEOUT)


@pytest.mark.parametrize("read", READS)
def test_an_unchanged_read_is_a_304_and_a_changed_one_a_new_200(stack_url: str, read: str) -> None:
    # Given a board of four members, and one of its reads as it has settled
    board = seeded_board(stack_url)
    suffix, shows = READS[read]
    url = f"{stack_url}/boards/{board}{suffix}"
    first = get(url)
    assert first.status_code == 200, first.text
    tag = first.headers["ETag"]

    # When it is asked for again with its tag
    again = get(url, tag)

    # Then the answer is a 304 with no body, under the same tag, to be revalidated next time
    assert again.status_code == 304
    assert again.content == b""
    assert again.headers["ETag"] == tag
    assert first.headers["Cache-Control"] == again.headers["Cache-Control"] == "no-cache"
    assert tag.startswith('"')  # strong: no W/

    # When a new member scores above them all, and the read is asked for with the old tag
    response = requests.put(f"{stack_url}/boards/{board}/members/m0", json={"score": 99}, timeout=TIMEOUT)
    assert response.status_code == 201, response.text

    def changed() -> requests.Response:
        answer = get(url, tag)
        assert answer.status_code == 200, answer.status_code
        assert shows(decimal_json(answer)) != shows(decimal_json(first))
        return answer

    # Then (once the stream has applied it) it is a 200 with the new body, under a new tag
    after = eventually(changed)
    assert after.headers["ETag"] != tag
    expected_change: dict[str, Any] = {
        "board": Decimal(5),
        "top": ["m0", "m1", "m2"],
        "rank": Decimal(3),
        "around": [(Decimal(2), "m1"), (Decimal(3), "m2"), (Decimal(4), "m3")],
        "scores": [(Decimal(3), "m2"), (Decimal(4), "m3")],
    }
    assert shows(decimal_json(after)) == expected_change[read]


def test_snapshots_and_members_revalidate_too(stack_url: str) -> None:
    # Given a board's snapshot list (empty until the schedule runs) and one of its members
    board = seeded_board(stack_url)
    for suffix in ("/snapshots", "/members/m1"):
        url = f"{stack_url}/boards/{board}{suffix}"
        first = get(url)
        assert first.status_code == 200, first.text

        # When either is asked for again with its tag
        again = get(url, first.headers["ETag"])

        # Then it is a 304 while nothing changed it (a member and its snapshots follow no stream)
        assert again.status_code == 304, suffix
        assert again.content == b""


def test_errors_are_never_304(stack_url: str) -> None:
    # When a board that does not exist is read with If-None-Match: * (any current answer)
    missing = get(f"{stack_url}/boards/{unique_id('none')}/top", "*")

    # Then it is the 404 as ever, with no validator
    assert missing.status_code == 404
    assert "ETag" not in missing.headers
