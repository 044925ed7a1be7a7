"""Bulk-load boards with the items the service writes for a member.

For every member: the ``MEMBER`` profile item, and the ``SCORE#all`` item with its
``RankIndex`` keys ``rpk``/``rsk``, built by the service's own placement and item codec. BatchWriteItem,
25 items a call, from several threads, retrying ``UnprocessedItems``. Boards grow:
a step adds the members a board does not have yet.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from podium import keys, numbers
from podium.dal import Database
from podium.dal.codecs import score_attributes
from podium.dal.schema import board_key, profile_key, score_key
from podium.models import BoardSettings, ScoreState
from podium.periods import ALL_TIME

BATCH = 25  # BatchWriteItem's limit
LOAD_THREADS = 4
TOP_SCORE = 10**7
LOADED_AT = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
LOADED_AT_US = int(LOADED_AT.timestamp() * 1_000_000)


def member_id(index: int) -> str:
    return f"player-{index:07d}"


@dataclass
class Population:
    """The members and scores every board and the Redis reference get: member ``i``
    has ``scores[i]``. Integers 0..10^7; one in ten is a round number (a multiple of
    10,000), so that scores tie often enough for shared ranks to matter."""

    seed: int = 5
    scores: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._random = random.Random(self.seed)

    def grow(self, size: int) -> None:
        draw = self._random
        while len(self.scores) < size:
            if draw.random() < 0.1:
                self.scores.append(draw.randrange(0, TOP_SCORE // 10_000) * 10_000)
            else:
                self.scores.append(draw.randrange(0, TOP_SCORE + 1))

    def listing(self, size: int, overrides: dict[int, int] | None = None) -> list[int]:
        """Member indexes in listing order (best score first; ties by member id, as
        ``tieBreak: shared`` sorts them)."""
        overrides = overrides or {}
        scores = self.scores
        return sorted(range(size), key=lambda i: (-overrides.get(i, scores[i]), i))


def score_item(
    store: Database, board_id: str, settings: BoardSettings, member: str, score: int
) -> dict[str, Any]:
    """The score item exactly as the service puts it (its placement and item codec)."""
    state = ScoreState(Decimal(score), 1, LOADED_AT_US)
    where = keys.placement(board_id, settings, member, state, ALL_TIME)
    attributes = score_attributes(state, where.partition, where.sort_key, where.expires)
    return {**score_key(board_id, member, ALL_TIME), **attributes}


def profile_item(board_id: str, member: str) -> dict[str, Any]:
    stamp = LOADED_AT.isoformat(timespec="microseconds")
    return {
        **profile_key(board_id, member),
        "data": {"S": numbers.dumps({})},
        "createdAt": {"S": stamp},
        "updatedAt": {"S": stamp},
    }


def batch_write(client: Any, table: str, items: list[dict[str, Any]]) -> None:
    pending: Any = {table: [{"PutRequest": {"Item": item}} for item in items]}
    delay = 0.01
    while pending:
        pending = client.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}
        if pending:
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


def _batches(
    store: Database,
    board_id: str,
    settings: BoardSettings,
    scores: list[int],
    start: int,
    stop: int,
    profiles: bool = True,
) -> Iterator[list[dict[str, Any]]]:
    items: list[dict[str, Any]] = []
    for index in range(start, stop):
        member = member_id(index)
        if profiles:
            items.append(profile_item(board_id, member))
        items.append(score_item(store, board_id, settings, member, scores[index]))
        if len(items) >= BATCH:
            yield items[:BATCH]
            items = items[BATCH:]
    if items:
        yield items


def grow_board(
    client: Any,
    store: Database,
    board_id: str,
    settings: BoardSettings,
    population: Population,
    start: int,
    stop: int,
    progress: Any,
    profiles: bool = True,
) -> None:
    """Put members ``start`` to ``stop`` - 1 on the board; ``progress.update(n)`` per item.
    Without ``profiles`` only the score items (what top and rank read) are written."""

    def write(items: list[dict[str, Any]]) -> int:
        batch_write(client, store.tables.table, items)
        return len(items)

    with ThreadPoolExecutor(max_workers=LOAD_THREADS) as pool:
        # map() would queue every batch at once; keep a bounded number in flight.
        in_flight: list[Any] = []
        for items in _batches(store, board_id, settings, population.scores, start, stop, profiles):
            in_flight.append(pool.submit(write, items))
            if len(in_flight) >= LOAD_THREADS * 4:
                progress.update(in_flight.pop(0).result())
        for future in in_flight:
            progress.update(future.result())


def set_member_count(client: Any, store: Database, board_id: str, count: int) -> None:
    """What the stream's aggregator would have counted for the loaded members."""
    client.update_item(
        TableName=store.tables.table_for(board_key(board_id)["pk"]["S"]),
        Key=board_key(board_id),
        UpdateExpression="SET memberCount = :n",
        ExpressionAttributeValues={":n": {"N": str(count)}},
    )
