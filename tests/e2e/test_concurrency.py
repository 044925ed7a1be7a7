"""Concurrent score submissions to one member are never lost nor applied twice."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
import requests

from tests.helpers import assert_equal, decimal_json, eventually, unique_id

pytestmark = pytest.mark.e2e

WRITERS = 32


def _submit_all(url: str, values: list[Decimal]) -> list[requests.Response]:
    def submit(value: Decimal) -> requests.Response:
        return requests.post(url, data=f'{{"value": {value}}}', timeout=120)

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        return list(pool.map(submit, values))


@pytest.mark.parametrize("shards", [1, 10])
def test_32_concurrent_increments_sum_exactly(stack_url: str, shards: int) -> None:
    # Given one member on an increment board
    board = unique_id("concurrent-sum")
    requests.put(f"{stack_url}/boards/{board}", json={"shards": shards}, timeout=30).raise_for_status()
    requests.put(f"{stack_url}/boards/{board}/members/hot", json={"score": 0}, timeout=30).raise_for_status()
    values = [Decimal(i) + Decimal("0.01") for i in range(1, WRITERS + 1)]

    # When 32 clients submit at once
    responses = _submit_all(f"{stack_url}/boards/{board}/members/hot/score", values)

    # Then every submission succeeded and the score is the exact sum
    assert [r.status_code for r in responses] == [200] * WRITERS
    member = decimal_json(requests.get(f"{stack_url}/boards/{board}/members/hot", timeout=30))
    assert member["score"] == sum(values)
    # And each answer saw a distinct previous score: every write applied once, in some order
    previous = sorted(decimal_json(r)["previousScore"] for r in responses)
    assert len(set(previous)) == WRITERS
    assert previous[0] == 0


def test_32_concurrent_best_submissions_keep_the_best(stack_url: str) -> None:
    # Given one member on a "best" board
    board = unique_id("concurrent-best")
    requests.put(f"{stack_url}/boards/{board}", json={"operator": "best"}, timeout=30).raise_for_status()
    requests.put(f"{stack_url}/boards/{board}/members/racer", json={}, timeout=30).raise_for_status()
    values = [Decimal(v) for v in range(WRITERS)]
    values[7] = Decimal("1000.5")

    # When 32 clients submit at once
    responses = _submit_all(f"{stack_url}/boards/{board}/members/racer/score", values)

    # Then the best one won, and the ranking index agrees at once
    assert all(r.status_code == 200 for r in responses)
    member = decimal_json(requests.get(f"{stack_url}/boards/{board}/members/racer", timeout=30))
    assert member["score"] == Decimal("1000.5")
    assert _top(stack_url, board, "consistent=true") == [("racer", Decimal("1000.5"))]
    # And the head, which the stream keeps (it may lag the writes by a second or two),
    # settles on the same answer
    eventually(lambda: assert_equal(_top(stack_url, board, ""), [("racer", Decimal("1000.5"))]))


def _top(stack_url: str, board: str, query: str) -> list[tuple[str, Decimal]]:
    page = decimal_json(requests.get(f"{stack_url}/boards/{board}/top?{query}", timeout=30))
    return [(e["memberId"], e["score"]) for e in page["entries"]]
