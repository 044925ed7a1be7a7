"""The insert-only event log of hot counters (``podium.events``): pages of events (one per
member and request) spread over ``EVENT_BUCKETS`` partitions per member, and the claims of
client event ids."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from podium import fanout
from podium.dal import codecs, schema
from podium.dal.client import Tables
from podium.errors import Conflict, WriteRejected
from podium.models import EventPage

TRANSACTION_ACTIONS = 100
# Pages settled in one transaction: a page's two actions (delete the page being claimed, put
# the claimed one).
SETTLE_CHUNK = TRANSACTION_ACTIONS // 2
CLAIM_ROUNDS = 8  # transactions of one chunk of claims: each round drops the ids found taken


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


class EventLog:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    def log_pages(self, pages: Sequence[EventPage], expires: int) -> None:
        """Insert the pages of one request, all or none, in one transaction (inserts only:
        no read). A request's pages are at most 100: one per member."""
        codes = self.tables.transact([{"Put": {"Item": codecs.page_item(page, expires)}} for page in pages])
        if codes is not None:
            raise WriteRejected("the events were not logged", codes)

    def log_claimed_pages(
        self,
        board_id: str,
        pages: Sequence[EventPage],
        claims: Sequence[tuple[str, str]],
        request: str,
        claim_expires: int,
        now: int,
        expires: int,
    ) -> set[tuple[str, str]] | None:
        """Insert claimed pages together with the claims of their ids, all or none, in one
        transaction (they fit in its 100 actions): None once written; else the claims found
        taken by another request (nothing was written: leave them out and send again), or
        none when another writer's transaction held one a moment."""
        actions: list[Any] = [self._claim_put(board_id, pair, request, claim_expires, now) for pair in claims]
        actions += [{"Put": {"Item": codecs.page_item(page, expires)}} for page in pages]
        if not actions:
            return None
        codes = self.tables.transact(actions)
        if codes is None:
            return None
        lost = {pair for pair, code in zip(claims, codes, strict=False) if code == "ConditionalCheckFailed"}
        if not lost and any(code not in ("None", "TransactionConflict") for code in codes):
            raise WriteRejected("the events were not logged", codes)
        if not lost:
            time.sleep(random.uniform(0.005, 0.02))
        return lost

    def _claim_put(
        self, board_id: str, pair: tuple[str, str], request: str, expires: int, now: int
    ) -> dict[str, Any]:
        member_id, event_id = pair
        item = {
            **schema.claim_key(board_id, member_id, event_id),
            "r": {"S": request},
            "ttl": {"N": str(expires)},
        }
        return {
            "Put": {
                "Item": item,
                "ConditionExpression": "attribute_not_exists(pk) OR r = :r OR #ttl < :now",
                "ExpressionAttributeNames": {"#ttl": "ttl"},
                "ExpressionAttributeValues": {":r": {"S": request}, ":now": {"N": str(now)}},
            }
        }

    def claim_ids(
        self,
        board_id: str,
        claims: Sequence[tuple[str, str]],
        request: str,
        expires: int,
        now: int,
    ) -> set[tuple[str, str]]:
        """Claim each (memberId, eventId) for ``request`` for 24 hours: the ones it holds,
        claimed now or before (a claim is idempotent for its request); an id that another
        request claimed within its window is not. Transactions of 100 conditional puts, sent
        at once: one whose condition fails cancels its transaction, which is sent again
        without the ids it names (DynamoDB says which action failed)."""

        def put(pair: tuple[str, str]) -> dict[str, Any]:
            return self._claim_put(board_id, pair, request, expires, now)

        def claim(chunk: Sequence[tuple[str, str]]) -> set[tuple[str, str]]:
            pending = list(chunk)
            delay = 0.01
            for _ in range(CLAIM_ROUNDS):
                if not pending:
                    return set()
                codes = self.tables.transact([put(pair) for pair in pending])
                if codes is None:
                    return set(pending)
                lost = {
                    pair
                    for pair, code in zip(pending, codes, strict=False)
                    if code == "ConditionalCheckFailed"
                }
                if lost:
                    pending = [pair for pair in pending if pair not in lost]
                    continue
                if any(code not in ("None", "TransactionConflict") for code in codes):
                    raise WriteRejected("the event ids were not claimed", codes)
                time.sleep(random.uniform(delay / 2, delay))  # another writer's transaction held an id
                delay *= 2
            raise Conflict("the event ids could not be claimed: too much contention; retry")

        won = fanout.gather(claim, _chunks(list(claims), TRANSACTION_ACTIONS))
        return set().union(*won)

    def read_claims(
        self, board_id: str, claims: Sequence[tuple[str, str]], request: str, now: int
    ) -> tuple[set[tuple[str, str]], list[tuple[str, str]]]:
        """The claims as they are, read consistently: those ``request`` holds, and those no
        one holds (absent, or past their 24 hours); the others are another request's."""
        keys = [schema.claim_key(board_id, member_id, event_id) for member_id, event_id in claims]
        found = self.tables.batch_get(keys, consistent=True)
        held, free = set(), []
        for pair, key in zip(claims, keys, strict=True):
            item = found.get((key["pk"]["S"], key["sk"]["S"]))
            if item is None or int(item["ttl"]["N"]) < now:
                free.append(pair)
            elif item["r"]["S"] == request:
                held.add(pair)
        return held, free

    def settle_pages(self, pages: Sequence[EventPage], expires: int) -> None:
        """Replace each page being claimed by its claimed form (its sum and count without the
        events that reuse an id), each page in one transaction with its removal; a page the
        fold took meanwhile is gone, and its claimed form is not written. A page left with no
        event is removed. Pages in transactions of 50, sent at once."""
        empty = [page for page in pages if page.count == 0]
        full = [page for page in pages if page.count > 0]

        def settle(chunk: Sequence[EventPage]) -> None:
            actions: list[Any] = []
            for page in chunk:
                claiming = codecs.page_key(replace(page, claimed=False))
                actions.append({"Delete": {"Key": claiming, "ConditionExpression": "attribute_exists(pk)"}})
                actions.append({"Put": {"Item": codecs.page_item(page, expires)}})
            codes = self.tables.transact(actions)
            if codes is None or "ConditionalCheckFailed" not in codes:
                if codes is not None:
                    raise WriteRejected("the pages were not settled", codes)
                return
            if len(chunk) > 1:  # some page was folded meanwhile: settle the others alone
                for page in chunk:
                    settle([page])

        fanout.gather(settle, _chunks(full, SETTLE_CHUNK))
        if empty:
            self.delete_pages([replace(page, claimed=False) for page in empty])

    def pages_now(self, pages: Sequence[EventPage]) -> list[EventPage]:
        """The pages as the log holds them now, read consistently in batches: each in the
        form it has now (being claimed, or claimed), or absent once folded."""
        keys = [
            schema.page_key(page.board_id, page.member_id, page.request, claimed)
            for page in pages
            for claimed in (False, True)
        ]
        items = self.tables.batch_get(keys, consistent=True)
        found = []
        for page in pages:
            for claimed in (True, False):
                key = schema.page_key(page.board_id, page.member_id, page.request, claimed)
                item = items.get((key["pk"]["S"], key["sk"]["S"]))
                if item is not None:
                    found.append(codecs.page_from_item(page.board_id, page.member_id, item))
                    break
        return found

    def page_removals(self, pages: Sequence[EventPage]) -> list[tuple[str, Any]]:
        """The actions that remove pages as they are now, for the transaction that writes the
        score they add to (``Members.write_score``'s ``also``): each fails if its page is gone
        or has changed form."""
        return [
            ("page", {"Delete": {"Key": k, "ConditionExpression": "attribute_exists(pk)"}})
            for k in _keys(pages)
        ]

    def delete_pages(self, pages: Sequence[EventPage]) -> None:
        """Remove pages that count nothing (every event in them reused an id): no score
        changes, so they need no transaction. Batches of 25, sent at once."""
        requests = [{"DeleteRequest": {"Key": codecs.page_key(page)}} for page in pages]
        fanout.gather(lambda chunk: self.tables.batch_write(list(chunk)), _chunks(requests, 25))

    def count_dropped(self, board_id: str, pages: Sequence[EventPage], count: int) -> bool:
        """Add ``count`` to the board's droppedEvents and remove the pages that hold those
        events, in one transaction; False, changing nothing, when a page is gone already
        (folded by another) or has changed form."""
        actions: list[Any] = [
            {
                "Update": {
                    "Key": schema.board_key(board_id),
                    "UpdateExpression": "ADD droppedEvents :n",
                    "ExpressionAttributeValues": {":n": {"N": str(count)}},
                }
            }
        ]
        actions += [
            {"Delete": {"Key": k, "ConditionExpression": "attribute_exists(pk)"}} for k in _keys(pages)
        ]
        codes = self.tables.transact(actions)
        if codes is not None and "ConditionalCheckFailed" not in codes:
            raise WriteRejected("the dropped events were not counted", codes)
        return codes is None

    def claimed_pages(
        self, board_id: str, member_id: str, most: int | None = None
    ) -> tuple[list[EventPage], list[int], bool]:
        """The member's claimed pages not yet folded: one consistent query per bucket, of the
        claimed pages' sort keys only, concurrently. With ``most``, each bucket is read for at
        most that many (and one more, to tell whether it holds more). Also the bytes each
        query read (``codecs.item_bytes``: what it is billed for), and whether every bucket
        was read to its end."""

        def bucket(index: int) -> tuple[list[EventPage], int, bool]:
            request: dict[str, Any] = {
                "KeyConditionExpression": "pk = :p AND begins_with(sk, :c)",
                "ExpressionAttributeValues": {
                    ":p": {"S": schema.event_pk(board_id, member_id, index)},
                    ":c": {"S": schema.PAGE_CLAIMED},
                },
                "ConsistentRead": True,
            }
            if most is not None:
                request["Limit"] = most + 1
            items: list[dict[str, Any]] = []
            for response in self.tables.query_pages(request):
                items.extend(response.get("Items", []))
                if most is not None:
                    if len(items) > most:
                        break
                    request["Limit"] = most + 1 - len(items)
            whole = most is None or len(items) <= most
            pages = [codecs.page_from_item(board_id, member_id, item) for item in items[:most]]
            return pages, sum(codecs.item_bytes(item) for item in items), whole

        read = fanout.gather(bucket, list(range(schema.EVENT_BUCKETS)))
        pages = [page for found, _, _ in read for page in found]
        return pages, [size for _, size, _ in read], all(whole for _, _, whole in read)

    def period_has_events(self, board_id: str, period: str) -> bool:
        """Whether any event of the board's ``period`` is still in the log (not folded and
        deleted yet): one query of one key of ``LogIndex`` per bucket, all at once, each
        asking for a single key. The index is eventually consistent: an event inserted a
        moment ago may be missing yet (``podium.results`` waits for a grace period first)."""

        def bucket(index: int) -> bool:
            request: dict[str, Any] = {
                "IndexName": schema.LOG_INDEX,
                "KeyConditionExpression": "#lp = :p",
                "ExpressionAttributeNames": {"#lp": schema.LOG_INDEX_PK},
                "ExpressionAttributeValues": {":p": {"S": schema.log_index_pk(board_id, period, index)}},
                "Limit": 1,
            }
            return bool(next(self.tables.query_pages(request)).get("Items"))

        return any(fanout.gather(bucket, list(range(schema.EVENT_BUCKETS))))


def _keys(pages: Sequence[EventPage]) -> list[dict[str, Any]]:
    return [codecs.page_key(page) for page in pages]
