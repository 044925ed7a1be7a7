"""The Python client (clients/python) against a local stack that checks tokens: every
route through ``PodiumClient``, with tokens from the stack's issuer, and what the
rankings answer compared with a plain sorted list of the scores written."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from contextlib import redirect_stdout
from decimal import Decimal
from pathlib import Path

import pytest

from podium_client import (
    Conflict,
    Event,
    Forbidden,
    Limits,
    LocalIssuer,
    NotFound,
    NotModified,
    PodiumClient,
    RateLimited,
    RetryPolicy,
    TopPage,
    Unauthorized,
)
from tests.helpers import assert_equal, eventually, expected_listing, unique_id
from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
LOCAL_API = "http://127.0.0.1:3000"

TIMEOUT = 30.0
# Ties, decimals and a negative score: the listing's order and shared ranks have work to do.
SCORES = {
    "ana": Decimal("82.3"),
    "ben": Decimal(94),
    "cid": Decimal("82.30"),
    "dia": Decimal(16),
    "eve": Decimal("-3.5"),
    "fay": Decimal(94),
    "gus": Decimal("0.000001"),
    "hal": Decimal(52),
    "ivy": Decimal("1234567890123456789012345678.9012345678"),  # 38 digits
    "jon": Decimal(0),
}

Listing = list[tuple[int, str, Decimal]]


@pytest.fixture(scope="module")
def admin(auth_stack: LocalStack) -> Iterator[PodiumClient]:
    with PodiumClient(auth_stack.url, token=LocalIssuer(auth_stack.url), timeout=TIMEOUT) as client:
        yield client


def player(stack: LocalStack, member: str, retry: RetryPolicy | None = None) -> PodiumClient:
    issuer = LocalIssuer(stack.url, role="player", member_id=member)
    return PodiumClient(stack.url, token=issuer, timeout=TIMEOUT, retry=retry)


def listing_of(
    client: PodiumClient, board: str, page_size: int | None = None, period: str | None = None
) -> Listing:
    """Every entry of the listing read from the ranking index, page after page."""
    entries = client.iter_top(board, page_size=page_size, period=period, consistent=True)
    return [(e.rank, e.member_id, e.score) for e in entries]


def window(listing: Listing, member: str, radius: int) -> Listing:
    """docs/api.md's around: 2·radius+1 consecutive entries centred on the member,
    shifted to stay full near either end."""
    at = [m for _, m, _ in listing].index(member)
    size = 2 * radius + 1
    start = max(0, min(at - radius, len(listing) - size))
    return listing[start : start + size]


def test_boards_are_created_confirmed_updated_and_listed(admin: PodiumClient) -> None:
    # Given a new board
    board = unique_id("client")
    made = admin.create_board(board, shards=3, title="Client", client_writes=True)
    assert (made.created, made.shards, made.title, made.client_writes) == (True, 3, "Client", True)

    # When its creation is sent again, then it is confirmed; with another fixed setting, refused
    again = admin.create_board(board, shards=3)
    assert again.created is False
    assert again == admin.get_board(board)
    with pytest.raises(Conflict) as refused:
        admin.create_board(board, shards=4)
    assert (refused.value.status, refused.value.code) == (409, "Conflict")

    # When settings that are not fixed change, then only they change
    updated = admin.update_board(board, title="Renamed", limits=Limits(max_value=Decimal("1000.5")))
    assert (updated.title, updated.shards, updated.limits.max_value) == ("Renamed", 3, Decimal("1000.5"))
    assert admin.get_board(board) == updated

    # And the board is listed, once, by the lazy iterator over small pages
    listed = [b.board_id for b in admin.iter_boards(page_size=3)]
    assert listed.count(board) == 1
    assert len(listed) == len(set(listed))


def test_rankings_agree_with_a_sorted_list(admin: PodiumClient) -> None:
    # Given a board of the SCORES, written through the client
    board = unique_id("client-ranks")
    admin.create_board(board, shards=3)
    for member, score in SCORES.items():
        assert admin.put_member(board, member, score=score, data={"n": len(member)}).created
    expected = expected_listing(SCORES)

    # Then top, page after page, is the sorted list
    assert listing_of(admin, board, page_size=3) == expected
    first = admin.top(board, limit=4, consistent=True, with_data=True)
    assert [(e.rank, e.member_id, e.score) for e in first.entries] == expected[:4]
    assert all(e.data == {"n": 3} for e in first.entries)

    # And each member's rank, each window around it and a friends' list agree with it
    rank_of = {member: rank for rank, member, _ in expected}
    for member, score in SCORES.items():
        rank = admin.rank(board, member, consistent=True)
        assert (rank.rank, rank.score) == (rank_of[member], score)
    for member in ("ben", "gus", "eve"):
        around = admin.around(board, member, radius=2)
        assert [(e.rank, e.member_id, e.score) for e in around.entries] == window(expected, member, 2)
    friends = admin.ranks(board, ["eve", "ana", "nobody", "ben", "ana"])
    assert [(e.rank, e.member_id, e.score) for e in friends] == [
        x for x in expected if x[1] in {"eve", "ana", "ben"}
    ]
    # and each score band, page after page, is the sorted list filtered by score
    for least, most in ((Decimal("0.000001"), Decimal("82.3")), (None, Decimal(0)), (Decimal(94), None)):
        band = admin.iter_scores(board, min=least, max=most, page_size=2)
        assert [(e.rank, e.member_id, e.score) for e in band] == [
            x for x in expected if (least is None or x[2] >= least) and (most is None or x[2] <= most)
        ]

    # And the totals count every member once the stream has caught up
    eventually(lambda: assert_equal(admin.rank(board, "jon").total, len(SCORES)))
    eventually(lambda: assert_equal(admin.get_board(board).member_count, len(SCORES)))


def test_submissions_are_exact_and_applied_once_per_key(admin: PodiumClient) -> None:
    # Given a member at 0
    board = unique_id("client-score")
    admin.create_board(board)
    admin.put_member(board, "m", score=0)

    # When 0.1 and 0.2 are added, and a keyed submission is sent twice
    admin.submit_score(board, "m", Decimal("0.1"))
    second = admin.submit_score(board, "m", Decimal("0.2"))
    once = admin.submit_score(board, "m", 5, idempotency_key="k-1")
    twice = admin.submit_score(board, "m", 5, idempotency_key="k-1")

    # Then the sum is exact, and the repeated key was applied once and answered the same
    assert (second.previous_score, second.score) == (Decimal("0.1"), Decimal("0.3"))
    assert once == twice
    assert admin.get_member(board, "m").score == Decimal("5.3")


def test_events_are_counted_once_per_id_and_read_fresh(admin: PodiumClient) -> None:
    # Given a member of an increment board
    board = unique_id("client-events")
    admin.create_board(board)
    admin.put_member(board, "hot")

    # When a batch is sent twice with the client's ids, and one event twice with its own id
    batch = [Event("hot", Decimal("1.5")), Event("hot", 2), Event("hot", 10, "mine")]
    assert admin.log_events(board, batch) == 3
    assert admin.log_events(board, [Event("hot", 10, "mine")]) == 1

    # Then every event counts once: at once in a fresh read, and in the score once folded
    assert admin.get_member(board, "hot", fresh=True).score == Decimal("13.5")
    eventually(lambda: assert_equal(admin.get_member(board, "hot").score, Decimal("13.5")))
    assert admin.get_member(board, "hot", fresh=True).pending_events == 0


def test_rivals_notifications_and_deletes(admin: PodiumClient) -> None:
    # Given two members, one following the other
    board = unique_id("client-rivals")
    admin.create_board(board)
    admin.put_member(board, "slow", score=10)
    admin.put_member(board, "fast", score=5)
    assert admin.put_rivals(board, "slow", ["fast", "fast"]) == ("fast",)
    assert admin.get_rivals(board, "slow") == ("fast",)

    # When the rival passes the member
    admin.submit_score(board, "fast", 6)

    # Then the member's inbox tells it, once
    def told() -> None:
        inbox = [n for n in admin.iter_notifications(board, "slow", page_size=1) if n.type == "overtaken"]
        assert [(n.by_member_id, n.score, n.by_score) for n in inbox] == [("fast", Decimal(10), Decimal(11))]

    eventually(told)

    # And a deleted member is gone from the member route and the listing, and a second delete is fine
    admin.delete_member(board, "fast")
    admin.delete_member(board, "fast")
    with pytest.raises(NotFound) as gone:
        admin.get_member(board, "fast")
    assert (gone.value.status, gone.value.code) == (404, "NotFound")
    assert listing_of(admin, board) == [(1, "slow", Decimal(10))]


def test_periods_and_snapshots(admin: PodiumClient) -> None:
    # Given a weekly board with two scores this week
    board = unique_id("client-weekly")
    made = admin.create_board(board, reset="weekly", retain_periods=2)
    assert (made.reset, made.retain_periods) == ("weekly", 2)
    admin.put_member(board, "a", score=3)
    admin.put_member(board, "b", score=7)

    # Then the current period is the listing, and the previous one has nothing
    assert listing_of(admin, board, period="current") == [(1, "b", Decimal(7)), (2, "a", Decimal(3))]
    assert listing_of(admin, board, period=made.period) == listing_of(admin, board)
    assert admin.top(board, period="previous").entries == ()
    assert admin.get_member(board, "a", period="previous").score is None
    with pytest.raises(NotFound):
        admin.rank(board, "a", period="previous")

    # And the snapshots route answers a page (the schedule's own test is test_snapshots.py)
    page = admin.snapshots(board, limit=5)
    assert list(admin.iter_snapshots(board, page_size=5)) == list(page.snapshots)


def test_top_takes_an_etag_when_the_service_gives_one(admin: PodiumClient) -> None:
    board = unique_id("client-etag")
    admin.create_board(board)
    admin.put_member(board, "a", score=1)
    page = admin.top(board, consistent=True)

    again = admin.top(board, consistent=True, if_none_match=page.etag or '"no-etag-yet"')

    # A service that sends ETags answers 304 for an unchanged page; one that does not, the page
    if page.etag:
        assert again == NotModified(page.etag)
    else:
        assert isinstance(again, TopPage)
        assert again.entries == page.entries


def test_tokens_roles_and_limits(auth_stack: LocalStack, admin: PodiumClient) -> None:
    # Given a board that players may write, with at most one submission a minute
    board = unique_id("client-acl")
    admin.create_board(board, client_writes=True, limits=Limits(max_submissions_per_minute=1))
    admin.put_member(board, "bob")

    # Then a player may add itself and submit its own score, but not another's, nor make boards
    with player(auth_stack, "alice", retry=RetryPolicy(max_retry_after=0)) as alice:
        assert alice.put_member(board, "alice", data={"nick": "al"}).created
        assert alice.submit_score(board, "alice", 4).score == Decimal(4)
        with pytest.raises(Forbidden) as forbidden:
            alice.submit_score(board, "bob", 4)
        assert forbidden.value.status == 403
        with pytest.raises(Forbidden):
            alice.create_board(unique_id("nope"))

        # And a second submission within the minute is RateLimited, with the wait it asks for
        with pytest.raises(RateLimited) as limited:
            alice.submit_score(board, "alice", 1)
        assert limited.value.retry_after is not None
        assert 0 < limited.value.retry_after <= 60
    assert admin.get_member(board, "alice").score == Decimal(4)

    # And a bad token, or none, is Unauthorized
    with PodiumClient(auth_stack.url, token="garbage", timeout=TIMEOUT) as stranger:
        with pytest.raises(Unauthorized) as refused:
            stranger.get_board(board)
        assert refused.value.code == "Unauthorized"
    with PodiumClient(auth_stack.url, timeout=TIMEOUT) as anonymous, pytest.raises(Unauthorized):
        anonymous.list_boards()


def example_and_output(markdown: Path) -> tuple[str, str]:
    """The first ```python block of the file, and the ```text block that follows it (a
    paragraph between, no other block)."""
    found = re.search(
        r"```python\n(.*?)```\n(?:[^`]*\n)?```text\n(.*?)```", markdown.read_text(encoding="utf-8"), re.S
    )
    assert found, f"{markdown.name} has no python example followed by its output"
    return found.group(1), found.group(2)


def test_the_documented_example_prints_what_the_docs_show(auth_stack: LocalStack) -> None:
    # Given the example of docs/client.md
    example, output = example_and_output(ROOT / "docs" / "client.md")
    assert LOCAL_API in example

    # When it runs against a stack that checks tokens as make run does, twice
    printed = []
    for _ in range(2):
        with redirect_stdout(io.StringIO()) as out:
            exec(compile(example.replace(LOCAL_API, auth_stack.url), "docs/client.md", "exec"), {})
        printed.append(out.getvalue())

    # Then it prints what the docs say, each time
    assert printed == [output, output]
