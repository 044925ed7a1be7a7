"""The Python client (clients/python) against httpx.MockTransport: what each route method
sends and reads back, exact numbers, pagination and ETags (its retries and tokens:
test_python_client_retries.py; the service itself: tests/e2e/test_python_client.py)."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import httpx
import pytest

from podium_client import Board, Entry, Event, Limits, NotModified, PodiumClient, TopPage
from tests.client_fakes import BOARD, MEMBER, Handler, Recorder, answer, client_of


def test_create_board_sends_the_settings_given_and_reads_the_board() -> None:
    # Given a service that creates the board
    client, seen = client_of(lambda request: answer(201, BOARD))

    # When a board is created with a few settings
    board = client.create_board("images", shards=10, title="Most viewed images", public_read=True)

    # Then only those settings were sent, and the board came back typed
    assert seen.requests[0].method == "PUT"
    assert seen.requests[0].url.path == "/boards/images"
    assert seen.bodies() == [{"shards": 10, "title": "Most viewed images", "publicRead": True}]
    assert isinstance(board, Board)
    assert board.created is True
    assert board.limits.max_value == Decimal(1000)
    assert board.member_count == 6


def test_every_route_reads_its_typed_result() -> None:
    # Given a service that answers each route with the contract's example body
    def route(request: httpx.Request) -> httpx.Response:
        path, method = request.url.path, request.method
        if path.endswith("/top"):
            entries = [{"rank": 1, "memberId": "img-006.jpg", "score": 94}]
            return answer(200, {"boardId": "images", "entries": entries, "total": 6, "nextCursor": None})
        if path.endswith("/rank"):
            rank = {"memberId": "u", "score": Decimal("82.3"), "rank": 211, "total": 1539}
            return answer(200, {**rank, "topPercent": Decimal("13.72")})
        if path.endswith("/score"):
            return answer(200, {"memberId": "img-001.jpg", "score": Decimal("38.2"), "previousScore": 27})
        if path.endswith("/events"):
            return answer(202, {"accepted": 2})
        if path.endswith("/rivals"):
            return answer(200, {"memberIds": ["a", "b"]})
        if method == "DELETE":
            return answer(204)
        return answer(200, MEMBER)

    client, seen = client_of(route)

    # When the routes are called, then each answer is the right model, scores exact
    page = client.top("images", limit=1)
    assert isinstance(page, TopPage)
    assert page.entries == (Entry(1, "img-006.jpg", Decimal(94)),)
    assert client.rank("images", "u").score == Decimal("82.3")
    result = client.submit_score("images", "img-001.jpg", Decimal("11.2"))
    assert (result.score, result.previous_score) == (Decimal("38.2"), Decimal(27))
    assert client.log_events("images", [Event("a", 1), Event("b", Decimal("0.5"), "e-1")]) == 2
    assert client.put_rivals("images", "c", ["a", "b", "a"]) == ("a", "b")
    assert client.get_member("images", "img-006.jpg", fresh=True).score == Decimal(94)
    client.delete_member("images", "img-006.jpg")

    # and the submission carried a key, the events an id each, the read its flag
    score_request = seen.requests[2]
    assert score_request.headers["Idempotency-Key"]
    events = seen.bodies()[3]["events"]
    assert [e["eventId"] for e in events][1] == "e-1"
    assert events[0]["eventId"]
    assert seen.requests[5].url.params["fresh"] == "true"


# -- exact numbers ------------------------------------------------------------------------


def summing_service() -> tuple[Handler, dict[str, Decimal]]:
    """A service whose one member's score is the exact sum of what was submitted."""
    held = {"score": Decimal(0)}

    def handler(request: httpx.Request) -> httpx.Response:
        value = json.loads(request.content, parse_float=Decimal, parse_int=Decimal)["value"]
        before, held["score"] = held["score"], held["score"] + value
        return answer(200, {"memberId": "m", "score": held["score"], "previousScore": before})

    return handler, held


def test_decimals_go_and_come_back_exact() -> None:
    # Given a service that adds up what it is sent, exactly
    handler, held = summing_service()
    client, seen = client_of(handler)

    # When 0.1 and then 0.2 are submitted, then the score is 0.3, not 0.30000000000000004
    client.submit_score("b", "m", Decimal("0.1"))
    result = client.submit_score("b", "m", Decimal("0.2"))
    assert (result.previous_score, result.score) == (Decimal("0.1"), Decimal("0.3"))

    # And 38 significant digits travel digit for digit, both ways
    digits = Decimal("-1234567890123456789.0123456789012345678")
    again = client.submit_score("b", "m", digits)
    assert seen.requests[-1].content == b'{"value":-1234567890123456789.0123456789012345678}'
    assert again.score == held["score"] == Decimal("0.3") + digits


def test_a_float_is_refused_before_anything_is_sent() -> None:
    client, seen = client_of(lambda request: answer(200, {}))

    with pytest.raises(TypeError, match="float"):
        client.submit_score("b", "m", 0.1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="float"):
        client.put_member("b", "m", data={"ratio": 0.5})

    assert seen.requests == []


def test_numbers_in_data_and_ranks_are_read_exactly() -> None:
    body = {**MEMBER, "score": Decimal("0.1"), "data": {"ratio": Decimal("0.30"), "level": 7}}
    client, _ = client_of(lambda request: answer(200, body))

    member = client.get_member("images", "img-006.jpg")

    assert member.score == Decimal("0.1")
    assert member.data == {"ratio": Decimal("0.30"), "level": 7}
    assert isinstance(member.data["ratio"], Decimal)


# -- pagination ---------------------------------------------------------------------------


class PagedService:
    """A service that pages ``items`` of one route ``size`` at a time, its cursors being the
    next index; it counts the pages it served."""

    def __init__(self, key: str, items: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> None:
        self.key, self.items, self.extra = key, items, extra or {}
        self.pages = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.pages += 1
        start = int(request.url.params.get("cursor", "0"))
        size = int(request.url.params.get("limit", "2"))
        end = start + size
        next_cursor = str(end) if end < len(self.items) else None
        return answer(200, {**self.extra, self.key: self.items[start:end], "nextCursor": next_cursor})


ENTRIES = [{"rank": i + 1, "memberId": f"m{i}", "score": Decimal(100 - i) / 10} for i in range(7)]
NOTIFICATION = {
    "type": "overtaken",
    "boardId": "b",
    "memberId": "m",
    "byMemberId": "r",
    "score": 1,
    "byScore": Decimal("1.5"),
    "createdAt": "2026-11-22T10:06:00Z",
}
SNAPSHOT = {"takenAt": "2026-11-22T10:05:00Z", "memberCount": 7, "entries": ENTRIES[:2]}


@pytest.mark.parametrize(
    ("key", "prefix", "items", "extra", "iterate", "identify"),
    [
        (
            "entries",
            "m",
            ENTRIES,
            {"boardId": "b", "total": 7},
            lambda c: c.iter_top("b", page_size=3),
            lambda e: e.member_id,
        ),
        (
            "entries",
            "m",
            ENTRIES,
            {"boardId": "b", "total": 7},
            lambda c: c.iter_scores("b", min=Decimal("9.4"), page_size=3),
            lambda e: e.member_id,
        ),
        (
            "boards",
            "b",
            [{**BOARD, "boardId": f"b{i}"} for i in range(7)],
            {},
            lambda c: c.iter_boards(page_size=3),
            lambda b: b.board_id,
        ),
        (
            "snapshots",
            "s",
            [{**SNAPSHOT, "snapshotId": f"s{i}"} for i in range(7)],
            {},
            lambda c: c.iter_snapshots("b", page_size=3),
            lambda s: s.snapshot_id,
        ),
        (
            "notifications",
            "n",
            [{**NOTIFICATION, "id": f"n{i}"} for i in range(7)],
            {},
            lambda c: c.iter_notifications("b", "m", page_size=3),
            lambda n: n.id,
        ),
    ],
    ids=["top", "scores", "boards", "snapshots", "notifications"],
)
def test_iterators_follow_the_cursor_lazily(
    key: str,
    prefix: str,
    items: list[dict[str, Any]],
    extra: dict[str, Any],
    iterate: Callable[[PodiumClient], Any],
    identify: Callable[[Any], str],
) -> None:
    # Given 7 items served 3 a page
    service = PagedService(key, items, extra)
    client, seen = client_of(service)

    # When the iterator is made and its first item taken, then one page was read, and none before
    iterator = iterate(client)
    assert service.pages == 0
    first = next(iterator)
    assert service.pages == 1

    # And the rest come in order, each once, over 3 pages that passed each nextCursor on
    rest = list(iterator)
    expected = [f"{prefix}{i}" for i in range(len(items))]
    assert [identify(x) for x in [first, *rest]] == expected
    assert service.pages == 3
    assert [r.url.params.get("cursor") for r in seen.requests] == [None, "3", "6"]
    assert {r.url.params["limit"] for r in seen.requests} == {"3"}


def test_top_entries_are_typed_and_the_scores_exact() -> None:
    client, _ = client_of(PagedService("entries", ENTRIES, {"boardId": "b", "total": 7}))

    entries = list(client.iter_top("b", page_size=5))

    assert entries[0] == Entry(1, "m0", Decimal(10))
    assert entries[6] == Entry(7, "m6", Decimal("9.4"))


# -- ETags --------------------------------------------------------------------------------


def test_top_sends_if_none_match_and_reads_a_304_as_not_modified() -> None:
    page = {"boardId": "b", "entries": ENTRIES[:1], "total": 7, "nextCursor": None}

    def service(request: httpx.Request) -> httpx.Response:
        if request.headers.get("If-None-Match") == '"v1"':
            return httpx.Response(304, headers={"ETag": '"v1"'})
        return answer(200, page, {"ETag": '"v1"'})

    client, seen = client_of(service)

    first = client.top("b")
    assert isinstance(first, TopPage)
    assert first.etag == '"v1"'
    assert client.top("b", if_none_match=first.etag) == NotModified('"v1"')
    assert seen.requests[1].headers["If-None-Match"] == '"v1"'
    # And a stale tag gets the page, as a service without ETags always answers
    assert client.top("b", if_none_match='"v0"') == first


# -- boards -------------------------------------------------------------------------------


def test_update_board_repeats_the_fixed_settings_it_read() -> None:
    # Given an asc, best, weekly board of 3 shards
    weekly = {**BOARD, "order": "asc", "operator": "best", "shards": 3, "reset": "weekly", "retainPeriods": 4}

    def service(request: httpx.Request) -> httpx.Response:
        return answer(200, weekly)

    client, seen = client_of(service)

    # When its title and limits change
    client.update_board("images", title="Renamed", limits=Limits())

    # Then the PUT repeated what is fixed (left out, a default would be a 409), with the changes
    assert [r.method for r in seen.requests] == ["GET", "PUT"]
    assert seen.bodies()[1] == {
        "order": "asc",
        "operator": "best",
        "tieBreak": "shared",
        "shards": 3,
        "reset": "weekly",
        "retainPeriods": 4,
        "title": "Renamed",
        "limits": {},
    }


def test_a_deployed_apis_stage_path_is_kept_and_ids_are_one_path_segment() -> None:
    # Given a client of a deployed API, whose ApiUrl ends with its stage
    recorder = Recorder(lambda request: answer(200, MEMBER))
    client = PodiumClient(
        "https://abc.execute-api.us-east-1.amazonaws.com/dev/", transport=httpx.MockTransport(recorder)
    )

    # When a member is read, then the route goes under the stage, each id one segment
    client.get_member("images", "user@example.com:1")
    client.get_member("images", "a/../../x")
    assert [r.url.raw_path for r in recorder.requests] == [
        b"/dev/boards/images/members/user@example.com:1",
        b"/dev/boards/images/members/a%2F..%2F..%2Fx",
    ]


# -- score bands --------------------------------------------------------------------------


def test_scores_sends_the_bands_ends_exactly_and_reads_a_ranked_page() -> None:
    # Given a service that answers a band of two members
    entries = [
        {"rank": 3, "memberId": "a", "score": Decimal("82.30")},
        {"rank": 3, "memberId": "b", "score": Decimal("82.3")},
    ]
    body = {"boardId": "b", "entries": entries, "total": 1539, "nextCursor": "c2"}
    client, seen = client_of(lambda request: answer(200, body, {"ETag": '"t1"'}))

    # When the band 82.3 .. 1e29 is read (its ends exact decimals, one an int)
    page = client.scores("b", min=Decimal("82.30"), max=10**29, limit=2, period="previous")

    # Then the ends went digit for digit, with the other parameters, on GET .../scores
    sent = seen.requests[0]
    assert (sent.method, sent.url.path) == ("GET", "/boards/b/scores")
    assert dict(sent.url.params) == {"min": "82.30", "max": str(10**29), "limit": "2", "period": "previous"}
    # and the page is typed, its scores exact, its cursor and tag kept
    assert page.entries == (Entry(3, "a", Decimal("82.3")), Entry(3, "b", Decimal("82.3")))
    assert (page.total, page.next_cursor, page.etag) == (1539, "c2", '"t1"')
    # and a band with no ends sends none
    client.scores("b")
    assert dict(seen.requests[1].url.params) == {}


def test_a_float_bound_is_refused_before_anything_is_sent() -> None:
    client, seen = client_of(lambda request: answer(200, {}))

    with pytest.raises(TypeError, match="float"):
        client.scores("b", min=0.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="float"):
        list(client.iter_scores("b", max=1.5))  # type: ignore[arg-type]

    assert seen.requests == []


def test_reshard_posts_the_count_and_reads_the_moving_board() -> None:
    # Given a stack that answers 202 with the board showing its move
    moving = {**BOARD, "reshard": {"toShards": 17, "startedAt": "2026-11-25T12:00:00Z", "copied": 0}}
    client, seen = client_of(lambda request: answer(202, moving))

    # When
    board = client.reshard("images", 17)

    # Then the request is the route's, and the board shows the move
    assert (seen.requests[0].method, seen.requests[0].url.path) == ("POST", "/boards/images/reshard")
    assert seen.bodies() == [{"shards": 17}]
    assert board.reshard is not None
    assert (board.reshard.to_shards, board.reshard.copied) == (17, 0)
    assert board.reshard.started_at.isoformat() == "2026-11-25T12:00:00+00:00"
    # and a board with no move on has none
    assert Board.from_json(BOARD).reshard is None
