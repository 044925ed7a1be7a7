"""Deleting a member over HTTP: the member added again starts afresh (its score, rivals,
inbox and its place in a follower's list are gone), and writes racing the delete never
leave a ranked member that GET cannot see. The local stack delivers every stream batch
twice, so the notifier's forgetting runs twice too."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import pytest
import requests

from podium import numbers
from tests.helpers import decimal_json, eventually, unique_id

pytestmark = pytest.mark.e2e

TIMEOUT = 30
ROUNDS = 15


def _put(url: str, body: Any) -> Any:
    response = requests.put(url, data=numbers.dumps(body), timeout=TIMEOUT)
    assert response.status_code in (200, 201), response.text
    return decimal_json(response)


def _get(url: str, **params: Any) -> requests.Response:
    return requests.get(url, params=params, timeout=TIMEOUT)


def _inbox(members: str, member: str) -> list[tuple[str, str]]:
    response = _get(f"{members}/{member}/notifications")
    assert response.status_code == 200, response.text
    return [(n["type"], n["byMemberId"]) for n in decimal_json(response)["notifications"]]


def _rivals(members: str, member: str) -> list[str]:
    response = _get(f"{members}/{member}/rivals")
    assert response.status_code == 200, response.text
    return list(response.json()["memberIds"])


def _listing(board_url: str) -> dict[str, Decimal]:
    """The board's members and scores, read from the ranking index (consistent=true)."""
    response = _get(f"{board_url}/top", consistent="true", limit=100)
    assert response.status_code == 200, response.text
    return {e["memberId"]: e["score"] for e in decimal_json(response)["entries"]}


def test_a_member_added_again_starts_afresh(stack_url: str) -> None:
    # Given ana (50), who follows bo and has been told that bo passed her; cy follows ana;
    # zed leads far ahead
    board = unique_id("forget")
    board_url = f"{stack_url}/boards/{board}"
    members = f"{board_url}/members"
    _put(board_url, {"shards": 3})
    for member, score in (("zed", 1000), ("ana", 50), ("bo", 40), ("cy", 10)):
        _put(f"{members}/{member}", {"score": score})
    _put(f"{members}/ana/rivals", {"memberIds": ["bo"]})
    _put(f"{members}/cy/rivals", {"memberIds": ["ana"]})
    response = requests.post(f"{members}/bo/score", json={"value": 15}, timeout=TIMEOUT)
    assert response.status_code == 200, response.text

    def told() -> None:
        assert _inbox(members, "ana") == [("overtaken", "bo")]

    eventually(told)

    # When ana is deleted (twice: a retried delete) and added again at once
    assert requests.delete(f"{members}/ana", timeout=TIMEOUT).status_code == 204
    assert requests.delete(f"{members}/ana", timeout=TIMEOUT).status_code == 204
    response = requests.put(f"{members}/ana", json={}, timeout=TIMEOUT)

    # Then it is a new member: score 0, no rivals, an empty inbox, ranked last by its new score
    assert response.status_code == 201, response.text
    assert decimal_json(_get(f"{members}/ana"))["score"] == 0
    assert _rivals(members, "ana") == []
    assert _inbox(members, "ana") == []
    rank = decimal_json(_get(f"{members}/ana/rank"))
    assert (rank["rank"], rank["score"]) == (4, 0)
    assert _listing(board_url) == {"zed": 1000, "bo": 55, "cy": 10, "ana": 0}

    # And, once the stream has run, cy no longer follows it, and the board counts 4 members
    def forgotten() -> None:
        assert _rivals(members, "cy") == []
        assert _get(board_url).json()["memberCount"] == 4

    eventually(forgotten)
    assert _inbox(members, "ana") == []


def test_writes_racing_a_delete_never_leave_a_ranked_member_get_cannot_see(stack_url: str) -> None:
    # Given a board with one member that stays, and one that is written and deleted at once
    board = unique_id("forget-race")
    board_url = f"{stack_url}/boards/{board}"
    members = f"{board_url}/members"
    _put(board_url, {"shards": 4})
    _put(f"{members}/stays", {"score": 5})
    contested = f"{members}/racer"

    def put() -> int:
        return requests.put(contested, json={"score": 10}, timeout=TIMEOUT).status_code

    def submit() -> int:
        return requests.post(f"{contested}/score", json={"value": 1}, timeout=TIMEOUT).status_code

    def delete() -> int:
        return requests.delete(contested, timeout=TIMEOUT).status_code

    present = False
    with ThreadPoolExecutor(max_workers=5) as pool:
        for _ in range(ROUNDS):
            _put(contested, {"score": 10})
            # When a PUT with a score, score submissions and a DELETE race each other
            futures = {name: pool.submit(f) for name, f in (("put", put), ("delete", delete))}
            futures |= {f"submit{i}": pool.submit(submit) for i in range(3)}
            codes = {name: future.result() for name, future in futures.items()}

            # Then each answered what the contract allows
            assert codes["delete"] == 204
            assert codes["put"] in (200, 201), codes
            assert all(codes[f"submit{i}"] in (200, 404) for i in range(3)), codes

            # And either GET sees the member and it is ranked with that score, or GET is
            # 404 and no ranking shows it
            member = _get(contested)
            listed = _listing(board_url)
            rank = _get(f"{contested}/rank")
            if member.status_code == 200:
                score = decimal_json(member)["score"]
                assert rank.status_code == 200, rank.text
                assert decimal_json(rank)["score"] == score
                assert listed == {"stays": 5, "racer": score}
                present = True
            else:
                assert member.status_code == 404, member.text
                assert rank.status_code == 404, rank.text
                assert listed == {"stays": 5}
                present = False

    # And once the stream settles, the counts agree with what GET sees
    expected = 2 if present else 1

    def counted() -> None:
        assert _get(board_url).json()["memberCount"] == expected
        assert decimal_json(_get(f"{members}/stays/rank"))["total"] == expected

    eventually(counted)
