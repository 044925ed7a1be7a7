"""Concurrent score submissions to one member are never lost nor applied twice, through
the Python client (each submission with its own Idempotency-Key, as the client sends it)."""

from __future__ import annotations

import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal

import pytest
import requests

from podium_client import PodiumClient, ScoreResult
from tests.helpers import assert_equal, eventually, unique_id

pytestmark = pytest.mark.e2e

WRITERS = 32


def _submit_all(stack_url: str, board: str, member: str, values: list[Decimal]) -> list[ScoreResult]:
    # One client for the 32 writers: httpx's connection pool serves threads, as a game server's would.
    with PodiumClient(stack_url, timeout=120.0) as client, ThreadPoolExecutor(max_workers=WRITERS) as pool:
        return list(pool.map(lambda value: client.submit_score(board, member, value), values))


@pytest.mark.parametrize("shards", [1, 10])
def test_32_concurrent_increments_sum_exactly(stack_url: str, podium: PodiumClient, shards: int) -> None:
    # Given one member on an increment board
    board = unique_id("concurrent-sum")
    podium.create_board(board, shards=shards)
    podium.put_member(board, "hot", score=0)
    values = [Decimal(i) + Decimal("0.01") for i in range(1, WRITERS + 1)]

    # When 32 clients submit at once
    results = _submit_all(stack_url, board, "hot", values)

    # Then every submission succeeded and the score is the exact sum
    assert len(results) == WRITERS
    assert podium.get_member(board, "hot").score == sum(values)
    # And each answer saw a distinct previous score: every write applied once, in some order
    previous = sorted(Decimal(-1) if r.previous_score is None else r.previous_score for r in results)
    assert len(set(previous)) == WRITERS
    assert previous[0] == 0


def test_32_concurrent_best_submissions_keep_the_best(stack_url: str, podium: PodiumClient) -> None:
    # Given one member on a "best" board
    board = unique_id("concurrent-best")
    podium.create_board(board, operator="best")
    podium.put_member(board, "racer")
    values = [Decimal(v) for v in range(WRITERS)]
    values[7] = Decimal("1000.5")

    # When 32 clients submit at once
    results = _submit_all(stack_url, board, "racer", values)

    # Then the best one won, and the ranking index agrees at once
    assert len(results) == WRITERS
    assert podium.get_member(board, "racer").score == Decimal("1000.5")
    assert _top(podium, board, consistent=True) == [("racer", Decimal("1000.5"))]
    # And the head, which the stream keeps (it may lag the writes by a second or two),
    # settles on the same answer
    eventually(lambda: assert_equal(_top(podium, board), [("racer", Decimal("1000.5"))]))


def _top(podium: PodiumClient, board: str, consistent: bool = False) -> list[tuple[str, Decimal]]:
    return [(e.member_id, e.score) for e in podium.top(board, consistent=consistent).entries]


INCREMENTS_EACH = 20


def test_32_writers_on_one_member_all_land_without_conflicts(stack_url: str, podium: PodiumClient) -> None:
    # Given one member on an increment board
    board = unique_id("contended")
    podium.create_board(board, operator="increment")
    podium.put_member(board, "hot", score=0)
    url = f"{stack_url}/boards/{board}/members/hot/score"

    # When 32 clients each submit 20 increments as fast as they are answered, sending one
    # again only after a 429's Retry-After, as the contract tells clients to
    def writer(index: int) -> list[requests.Response]:
        answers = []
        with requests.Session() as session:
            for step in range(INCREMENTS_EACH):
                value = {"value": index * INCREMENTS_EACH + step + 1}
                while True:
                    response = session.post(url, json=value, timeout=120)
                    answers.append(response)
                    if response.status_code != 429:
                        break
                    time.sleep(int(response.headers["Retry-After"]))
        return answers

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        answers = [answer for answered in pool.map(writer, range(WRITERS)) for answer in answered]

    # Then no answer was a 409 (nor any other error): each was 200, or a 429 Throttled that
    # changed nothing and said when to send it again
    statuses = Counter(answer.status_code for answer in answers)
    print(f"answers by status: {dict(statuses)}")  # how many 429s the machine's load caused (-s)
    assert set(statuses) <= {200, 429}, [answer.text for answer in answers if answer.status_code != 200][:3]
    assert {answer.json()["code"] for answer in answers if answer.status_code == 429} <= {"Throttled"}
    # And all 640 landed, each once: the score is their exact sum
    total = WRITERS * INCREMENTS_EACH
    assert statuses[200] == total, statuses
    assert podium.get_member(board, "hot").score == total * (total + 1) // 2
