"""``PodiumClient``: one method per route of docs/openapi.yaml, typed results.

Each method builds a ``Call`` (what to send, and whether sending it twice is safe) and
reads the answer into a model; ``transport.Sender`` does the sending, the token and the
retries. Listings that come a page at a time have a page method (``top``,
``list_boards``, ``snapshots``, ``notifications``) and an ``iter_*`` twin that follows
``nextCursor`` lazily.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from typing import Any, Protocol, TypeVar, overload
from urllib.parse import quote

import httpx

from podium_client import codec
from podium_client.models import (
    AroundPage,
    Board,
    BoardPage,
    Entry,
    Event,
    Limits,
    Member,
    Notification,
    NotificationPage,
    NotModified,
    Rank,
    ScoreResult,
    Snapshot,
    SnapshotPage,
    TopPage,
)
from podium_client.retry import RetryPolicy
from podium_client.tokens import TokenSource
from podium_client.transport import Call, Sender

DEFAULT_TIMEOUT = 10.0


class _Paged(Protocol):
    @property
    def next_cursor(self) -> str | None: ...


Page = TypeVar("Page", bound=_Paged)
Item = TypeVar("Item")


def _segment(identifier: str) -> str:
    # Ids cannot hold "/" (docs/api.md), but a caller's typo must not reach another route.
    return quote(identifier, safe=":@~")


def _flag(value: bool) -> str:
    return "true" if value else "false"


def _params(**given: str | int | bool | None) -> dict[str, str]:
    """Query parameters, by the API's names, leaving out the ones not given (and the
    flags left false, which are the defaults)."""
    params: dict[str, str] = {}
    for name, value in given.items():
        if value is None or value is False:
            continue
        params[name] = _flag(value) if isinstance(value, bool) else str(value)
    return params


def _bound(value: Decimal | int | None, name: str) -> str | None:
    """An end of a score band as the query carries it: the exact number (``82.3``)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, Decimal | int):
        raise TypeError(f"{name} is a {type(value).__name__}; pass score bounds as decimal.Decimal (or int)")
    return codec.number_text(Decimal(value))


def _board_body(**settings: Any) -> dict[str, Any]:
    body = {name: value for name, value in settings.items() if value is not None}
    if isinstance(body.get("limits"), Limits):
        body["limits"] = body["limits"].to_json()
    if "rollupTo" in body:
        body["rollupTo"] = list(body["rollupTo"])
    return body


class PodiumClient:
    """A client of one Podium API. ``base_url`` is the API's root (``make run``:
    ``http://127.0.0.1:3000``; a deployed stack: its ``ApiUrl``). ``token``: None (a
    ``publicRead`` board's reads, or a stack with checks off), a string, a callable that
    returns one (called for every request) or a provider of ``podium_client.tokens``.
    ``retry`` says how to retry (``RetryPolicy``); ``transport`` replaces httpx's (tests
    pass ``httpx.MockTransport``). Use it as a context manager, or ``close()`` it."""

    def __init__(
        self,
        base_url: str,
        token: TokenSource = None,
        *,
        retry: RetryPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        transport: httpx.BaseTransport | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url, timeout=timeout, transport=transport, headers=headers or {}
        )
        self._sender = Sender(self._http, token, retry or RetryPolicy())

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PodiumClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- sending ---------------------------------------------------------------------------

    def _answer(self, call: Call) -> tuple[Any, httpx.Response]:
        response = self._sender.send(call)
        body = codec.loads(response.content) if response.content else None
        return body, response

    def _json(self, call: Call) -> Any:
        return self._answer(call)[0]

    # -- boards ----------------------------------------------------------------------------

    def create_board(
        self,
        board_id: str,
        *,
        order: str | None = None,
        operator: str | None = None,
        tie_break: str | None = None,
        shards: int | None = None,
        reset: str | None = None,
        retain_periods: int | None = None,
        rollup_to: Iterable[str] | None = None,
        title: str | None = None,
        client_writes: bool | None = None,
        public_read: bool | None = None,
        limits: Limits | None = None,
        announce_top: int | None = None,
    ) -> Board:
        """``PUT /boards/{boardId}``: create the board (``created`` True), or confirm one
        with the same fixed settings, updating those that are not fixed (Conflict when a
        fixed setting differs). Settings left as None are left out: the service's default
        for a fixed one, the board's current value for one that is not."""
        body = _board_body(
            order=order,
            operator=operator,
            tieBreak=tie_break,
            shards=shards,
            reset=reset,
            retainPeriods=retain_periods,
            rollupTo=rollup_to,
            title=title,
            clientWrites=client_writes,
            publicRead=public_read,
            limits=limits,
            announceTop=announce_top,
        )
        answer, response = self._answer(Call("PUT", f"/boards/{_segment(board_id)}", body=body))
        return Board.from_json(answer, created=response.status_code == 201)

    def update_board(
        self,
        board_id: str,
        *,
        title: str | None = None,
        client_writes: bool | None = None,
        public_read: bool | None = None,
        limits: Limits | None = None,
        announce_top: int | None = None,
    ) -> Board:
        """Change the settings that are not fixed of an existing board (NotFound if there is
        none): it reads the board and sends its fixed settings back with the new values."""
        board = self.get_board(board_id)
        body = {
            **board.fixed_settings(),
            **_board_body(
                title=title,
                clientWrites=client_writes,
                publicRead=public_read,
                limits=limits,
                announceTop=announce_top,
            ),
        }
        answer, response = self._answer(Call("PUT", f"/boards/{_segment(board_id)}", body=body))
        return Board.from_json(answer, created=response.status_code == 201)

    def get_board(self, board_id: str) -> Board:
        return Board.from_json(self._json(Call("GET", f"/boards/{_segment(board_id)}")))

    def reshard(self, board_id: str, shards: int) -> Board:
        """Start moving the board to ``shards`` shards (admin): the board, whose ``reshard``
        shows the move until it is over. ``Conflict`` when a move is on, or to its count."""
        path = f"/boards/{_segment(board_id)}/reshard"
        return Board.from_json(self._json(Call("POST", path, body={"shards": shards})))

    def list_boards(self, *, limit: int | None = None, cursor: str | None = None) -> BoardPage:
        return BoardPage.from_json(self._json(Call("GET", "/boards", _params(limit=limit, cursor=cursor))))

    def iter_boards(self, *, page_size: int | None = None) -> Iterator[Board]:
        """Every board, a page of ``page_size`` at a time, fetched as the iteration needs it."""
        return _follow(lambda cursor: self.list_boards(limit=page_size, cursor=cursor), lambda p: p.boards)

    # -- members ---------------------------------------------------------------------------

    def _member_path(self, board_id: str, member_id: str) -> str:
        return f"/boards/{_segment(board_id)}/members/{_segment(member_id)}"

    def put_member(
        self,
        board_id: str,
        member_id: str,
        *,
        data: dict[str, Any] | None = None,
        score: Decimal | int | None = None,
        hidden: bool | None = None,
    ) -> Member:
        """``PUT .../members/{memberId}``: add the member (``created`` True) or replace what
        is given of it (``data={}`` clears its data; a ``score`` replaces its score)."""
        body = {
            name: value
            for name, value in (("data", data), ("score", score), ("hidden", hidden))
            if value is not None
        }
        answer, response = self._answer(Call("PUT", self._member_path(board_id, member_id), body=body))
        return Member.from_json(answer, created=response.status_code == 201)

    def get_member(
        self, board_id: str, member_id: str, *, fresh: bool = False, period: str | None = None
    ) -> Member:
        """The member; ``fresh`` adds the events not folded yet (``pending_events``)."""
        params = _params(fresh=fresh, period=period)
        return Member.from_json(self._json(Call("GET", self._member_path(board_id, member_id), params)))

    def delete_member(self, board_id: str, member_id: str) -> None:
        """Delete the member (also when it is not there: a retried delete succeeds)."""
        self._sender.send(Call("DELETE", self._member_path(board_id, member_id)))

    def submit_score(
        self, board_id: str, member_id: str, value: Decimal | int, *, idempotency_key: str | None = None
    ) -> ScoreResult:
        """``POST .../score``: the board's operator applies ``value``. The call carries an
        ``Idempotency-Key`` (a new uuid4 unless given), the same on every retry, so a
        submission whose answer was lost is applied once however often it is resent."""
        key = idempotency_key or str(uuid.uuid4())
        call = Call(
            "POST",
            f"{self._member_path(board_id, member_id)}/score",
            body={"value": value},
            headers={"Idempotency-Key": key},
        )
        return ScoreResult.from_json(self._json(call))

    # -- rankings --------------------------------------------------------------------------

    @overload
    def top(
        self,
        board_id: str,
        *,
        limit: int | None = ...,
        cursor: str | None = ...,
        with_data: bool = ...,
        consistent: bool = ...,
        period: str | None = ...,
        if_none_match: None = ...,
    ) -> TopPage: ...

    @overload
    def top(
        self,
        board_id: str,
        *,
        limit: int | None = ...,
        cursor: str | None = ...,
        with_data: bool = ...,
        consistent: bool = ...,
        period: str | None = ...,
        if_none_match: str,
    ) -> TopPage | NotModified: ...

    def top(
        self,
        board_id: str,
        *,
        limit: int | None = None,
        cursor: str | None = None,
        with_data: bool = False,
        consistent: bool = False,
        period: str | None = None,
        if_none_match: str | None = None,
    ) -> TopPage | NotModified:
        """A page of the listing. With ``if_none_match`` (a page's ``etag``) a service that
        supports it answers 304, returned as NotModified; one that does not answers the
        page, as it always does."""
        params = _params(limit=limit, cursor=cursor, withData=with_data, consistent=consistent, period=period)
        headers = {"If-None-Match": if_none_match} if if_none_match else {}
        path = f"/boards/{_segment(board_id)}/top"
        call = Call("GET", path, params, headers=headers, expect=frozenset({304}))
        answer, response = self._answer(call)
        etag = response.headers.get("ETag")
        if response.status_code == 304:
            return NotModified(etag or if_none_match)
        return TopPage.from_json(answer, etag)

    def iter_top(
        self,
        board_id: str,
        *,
        page_size: int | None = None,
        with_data: bool = False,
        consistent: bool = False,
        period: str | None = None,
    ) -> Iterator[Entry]:
        """Every entry of the listing, better first, a page at a time as iterated."""

        def page(cursor: str | None) -> TopPage:
            return self.top(
                board_id,
                limit=page_size,
                cursor=cursor,
                with_data=with_data,
                consistent=consistent,
                period=period,
            )

        return _follow(page, lambda p: p.entries)

    def rank(
        self, board_id: str, member_id: str, *, consistent: bool = False, period: str | None = None
    ) -> Rank:
        params = _params(consistent=consistent, period=period)
        path = f"{self._member_path(board_id, member_id)}/rank"
        return Rank.from_json(self._json(Call("GET", path, params)))

    def around(
        self, board_id: str, member_id: str, *, radius: int | None = None, period: str | None = None
    ) -> AroundPage:
        params = _params(radius=radius, period=period)
        path = f"{self._member_path(board_id, member_id)}/around"
        return AroundPage.from_json(self._json(Call("GET", path, params)))

    def ranks(
        self, board_id: str, member_ids: Iterable[str], *, period: str | None = None
    ) -> tuple[Entry, ...]:
        """``POST .../ranks``: the members that exist, in listing order, with their ranks
        (a read, so it is retried like one)."""
        path = f"/boards/{_segment(board_id)}/ranks"
        call = Call("POST", path, _params(period=period), body={"memberIds": list(member_ids)})
        return tuple(Entry.from_json(e) for e in self._json(call)["entries"])

    def scores(
        self,
        board_id: str,
        *,
        min: Decimal | int | None = None,  # noqa: A002 - the API's names for the band's ends
        max: Decimal | int | None = None,  # noqa: A002
        limit: int | None = None,
        cursor: str | None = None,
        period: str | None = None,
    ) -> TopPage:
        """``GET .../scores``: a page of the members whose score lies between ``min`` and
        ``max`` (each optional and inclusive), in listing order with board-wide ranks. The
        ends go as the exact decimals given; a float is refused, as everywhere."""
        params = _params(
            min=_bound(min, "min"), max=_bound(max, "max"), limit=limit, cursor=cursor, period=period
        )
        answer, response = self._answer(Call("GET", f"/boards/{_segment(board_id)}/scores", params))
        return TopPage.from_json(answer, response.headers.get("ETag"))

    def iter_scores(
        self,
        board_id: str,
        *,
        min: Decimal | int | None = None,  # noqa: A002
        max: Decimal | int | None = None,  # noqa: A002
        page_size: int | None = None,
        period: str | None = None,
    ) -> Iterator[Entry]:
        """Every entry of the band, better first, a page at a time as iterated."""

        def page(cursor: str | None) -> TopPage:
            return self.scores(board_id, min=min, max=max, limit=page_size, cursor=cursor, period=period)

        return _follow(page, lambda p: p.entries)

    # -- events ----------------------------------------------------------------------------

    def log_events(self, board_id: str, events: Iterable[Event], *, assign_ids: bool = True) -> int:
        """``POST .../events``; the number accepted. Each event without an ``event_id`` gets
        a new uuid4 here, so that a batch resent after a lost answer is counted once.
        ``assign_ids=False`` sends such events without one: a fresh read can then count
        more of them (docs/api.md), but a batch whose answer was lost is not sent again."""
        batch = []
        for event in events:
            event_id = event.event_id or (str(uuid.uuid4()) if assign_ids else None)
            sent: dict[str, Any] = {"memberId": event.member_id, "value": event.value}
            if event_id is not None:
                sent["eventId"] = event_id
            batch.append(sent)
        repeatable = all("eventId" in sent for sent in batch)
        call = Call(
            "POST", f"/boards/{_segment(board_id)}/events", body={"events": batch}, repeatable=repeatable
        )
        return int(self._json(call)["accepted"])

    # -- rivals and notifications ----------------------------------------------------------

    def get_rivals(self, board_id: str, member_id: str) -> tuple[str, ...]:
        answer = self._json(Call("GET", f"{self._member_path(board_id, member_id)}/rivals"))
        return tuple(answer["memberIds"])

    def put_rivals(self, board_id: str, member_id: str, member_ids: Iterable[str]) -> tuple[str, ...]:
        """Replace the member's rivals; the list as kept (in the order given, each once)."""
        path = f"{self._member_path(board_id, member_id)}/rivals"
        call = Call("PUT", path, body={"memberIds": list(member_ids)})
        return tuple(self._json(call)["memberIds"])

    def notifications(
        self, board_id: str, member_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> NotificationPage:
        path = f"{self._member_path(board_id, member_id)}/notifications"
        return NotificationPage.from_json(self._json(Call("GET", path, _params(limit=limit, cursor=cursor))))

    def iter_notifications(
        self, board_id: str, member_id: str, *, page_size: int | None = None
    ) -> Iterator[Notification]:
        """The member's inbox, newest first, a page at a time as iterated."""
        return _follow(
            lambda cursor: self.notifications(board_id, member_id, limit=page_size, cursor=cursor),
            lambda p: p.notifications,
        )

    # -- snapshots -------------------------------------------------------------------------

    def snapshots(
        self, board_id: str, *, limit: int | None = None, cursor: str | None = None
    ) -> SnapshotPage:
        path = f"/boards/{_segment(board_id)}/snapshots"
        return SnapshotPage.from_json(self._json(Call("GET", path, _params(limit=limit, cursor=cursor))))

    def iter_snapshots(self, board_id: str, *, page_size: int | None = None) -> Iterator[Snapshot]:
        """The board's snapshots, newest first, a page at a time as iterated."""
        return _follow(
            lambda cursor: self.snapshots(board_id, limit=page_size, cursor=cursor), lambda p: p.snapshots
        )


def _follow(fetch: Callable[[str | None], Page], items: Callable[[Page], Iterable[Item]]) -> Iterator[Item]:
    """The items of page after page, fetching the next only when the last is used up."""
    cursor: str | None = None
    while True:
        page = fetch(cursor)
        yield from items(page)
        cursor = page.next_cursor
        if cursor is None:
            return
