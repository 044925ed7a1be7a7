"""Over HTTP, against the local stack (stream batches delivered twice): a small top-k
comes from the head kept by the stream and catches up with writes; `consistent=true`
reads the index at once; ranks agree either way; and the count tree the stack's
aggregator keeps counts like the sorted board, through changes, hides and deletes."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from typing import Any

import boto3
import pytest
import requests

from devstack import template as template_module
from podium import numbers
from podium.dal import Database
from podium.keys import member_of_key
from tests.helpers import assert_equal, decimal_json, eventually, expected_listing, unique_id
from tests.integration.test_rank_structures import assert_tree_counts_the_index
from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e

TIMEOUT = 30


def _call(method: str, url: str, body: Any = None) -> Any:
    data = numbers.dumps(body) if body is not None else None
    response = requests.request(method, url, data=data, timeout=TIMEOUT)
    assert response.status_code in (200, 201), response.text
    return decimal_json(response)


def test_the_first_page_follows_writes_from_the_head_and_consistent_reads_the_index(
    stack_url: str,
) -> None:
    # Given a board of 30 members whose head the stream has built
    board = unique_id("headed")
    base = f"{stack_url}/boards/{board}"
    _call("PUT", base, {"shards": 4})
    scores = {f"p{i:02d}": Decimal(i * 3) for i in range(30)}
    for member, score in scores.items():
        _call("PUT", f"{base}/members/{member}", {"score": score})

    def first_page(query: str) -> list[tuple[str, Decimal]]:
        page = _call("GET", f"{base}/top?{query}")
        return [(e["memberId"], e["score"]) for e in page["entries"]]

    def expected(limit: int) -> list[tuple[str, Decimal]]:
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]

    eventually(lambda: assert_equal(first_page("limit=10"), expected(10)))

    # When a member jumps to the lead
    scores["p00"] = Decimal(500)
    _call("POST", f"{base}/members/p00/score", {"value": 500})

    # Then the index shows it at once, and the head within seconds
    assert first_page("limit=10&consistent=true") == expected(10)
    eventually(lambda: assert_equal(first_page("limit=10"), expected(10)))
    # and a cursor from a head page continues in the index without a gap
    head_page = _call("GET", f"{base}/top?limit=7")
    rest = _call("GET", f"{base}/top?limit=100&cursor={head_page['nextCursor']}")
    listing = [(e["memberId"], e["rank"]) for e in head_page["entries"] + rest["entries"]]
    assert [m for m, _ in listing] == [m for m, _ in expected(30)]
    assert [r for _, r in listing] == list(range(1, 31))
    assert rest["nextCursor"] is None
    # and a member's rank is the same as the stream keeps it and from the index
    # (total is the board's memberCount, which the stream keeps: it may still be catching up)
    for member in ("p00", "p15", "p01"):
        rank = _call("GET", f"{base}/members/{member}/rank")
        index = _call("GET", f"{base}/members/{member}/rank?consistent=true")
        assert (rank["rank"], rank["score"]) == (index["rank"], index["score"])
        assert rank["rank"] == 1 + sum(1 for s in scores.values() if s > scores[member])
    eventually(lambda: assert_equal(_call("GET", f"{base}/members/p00/rank")["total"], 30))


def test_pages_past_the_head_read_the_index_steered_by_its_ladder(stack_url: str) -> None:
    # Given a board of 400 members on 10 shards: more than the head's 128 keys, so the
    # stream keeps a ladder too (and the stack delivers every batch twice, which moves
    # the ladder's counts twice)
    board = unique_id("ladder")
    base = f"{stack_url}/boards/{board}"
    _call("PUT", base, {"shards": 10})
    scores = {f"q{i:03d}": Decimal(i * 37 % 401) / 4 for i in range(400)}
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda m: _call("PUT", f"{base}/members/{m}", {"score": scores[m]}), scores))
    ordered = sorted(scores, key=lambda m: (-scores[m], m))
    eventually(
        lambda: assert_equal(_call("GET", f"{base}/top?limit=100")["entries"][0]["memberId"], ordered[0])
    )

    # When the whole listing is read from the index, 60 entries a page, cursor after cursor
    listing: list[tuple[str, Decimal, int]] = []
    query = "limit=60&consistent=true"
    while True:
        page = _call("GET", f"{base}/top?{query}")
        listing += [(e["memberId"], e["score"], e["rank"]) for e in page["entries"]]
        if page["nextCursor"] is None:
            break
        query = f"limit=60&cursor={page['nextCursor']}"

    # Then it is the board, sorted, with shared ranks
    assert [(m, s) for m, s, _ in listing] == [(m, scores[m]) for m in ordered]
    assert [r for _, _, r in listing] == [
        1 + sum(1 for v in scores.values() if v > scores[m]) for m in ordered
    ]


def test_consistent_must_be_true_or_false(stack_url: str) -> None:
    board = unique_id("flag")
    _call("PUT", f"{stack_url}/boards/{board}", {})
    for path in ("top", "members/x/rank"):
        response = requests.get(f"{stack_url}/boards/{board}/{path}?consistent=yes", timeout=TIMEOUT)
        assert response.status_code == 400
        assert "consistent" in response.json()["message"]


def test_the_stacks_aggregator_keeps_a_count_tree_that_counts_like_the_sorted_board(
    stack: LocalStack, dynamodb_endpoint: str
) -> None:
    # Given a board of 120 members on 5 shards, written over HTTP by 8 clients at once:
    # scores set, changed, some members hidden (one shown again) and some deleted
    board = unique_id("treed")
    base = f"{stack.url}/boards/{board}"
    _call("PUT", base, {"shards": 5})
    draw = random.Random(9)
    scores = {f"t{i:03d}": Decimal(draw.randrange(300)) / 4 for i in range(120)}
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda m: _call("PUT", f"{base}/members/{m}", {"score": scores[m]}), scores))
        changed = draw.sample(sorted(scores), 40)
        moved = list(pool.map(lambda m: _call("POST", f"{base}/members/{m}/score", {"value": 7}), changed))
    scores.update({m: answer["score"] for m, answer in zip(changed, moved, strict=True)})
    hidden = draw.sample(sorted(scores), 6)
    for member in hidden:
        _call("PUT", f"{base}/members/{member}", {"hidden": True})
    _call("PUT", f"{base}/members/{hidden[0]}", {"hidden": False})
    deleted = draw.sample(sorted(set(scores) - set(hidden)), 5)
    for member in deleted:
        assert requests.delete(f"{base}/members/{member}", timeout=TIMEOUT).status_code == 204
    shown = {m: s for m, s in scores.items() if m not in deleted and m not in hidden[1:]}

    # When the stack's stream has caught up
    store = Database.connect(
        template_module.read(stack.table_prefix).settings(),
        client=boto3.client("dynamodb", endpoint_url=dynamodb_endpoint),
    )

    # Then the tree holds exactly the shown members, once each, counts like the sorted
    # index, and the index is the board as the model sorts it
    def tree_is_the_board() -> None:
        listed = assert_tree_counts_the_index(store, board)
        assert [member_of_key(k) for k in listed] == [m for _, m, _ in expected_listing(shown)]

    # The stack is shared by the session's e2e tests: its stream may hold another test's
    # backlog (thousands of events) ahead of these records on a busy machine
    eventually(tree_is_the_board, timeout=180)
