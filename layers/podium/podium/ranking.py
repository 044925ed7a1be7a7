"""Pure ranking logic: merging shard pages, assigning ranks, choosing an around-window.

Nothing here talks to DynamoDB; ``podium.service`` feeds it what the index returned.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from decimal import Decimal

from podium.keys import RankOrder
from podium.models import IndexEntry, RankedEntry


def merge_shards(pages: Iterable[Sequence[str]], limit: int) -> list[str]:
    """The first ``limit`` sort keys of the union of sorted shard pages.

    Sort keys are unique and their order is the listing order, so this is exact as
    long as every shard page holds all of that shard's keys that could be in the result.
    """
    merged: list[str] = []
    for key in heapq.merge(*pages):
        if len(merged) == limit:
            break
        merged.append(key)
    return merged


def decode(order: RankOrder, sort_keys: Iterable[str]) -> list[IndexEntry]:
    entries = []
    for key in sort_keys:
        score, member_id = order.parse(key)
        entries.append(IndexEntry(sort_key=key, member_id=member_id, score=score))
    return entries


def assign_ranks(
    entries: Sequence[IndexEntry],
    *,
    earliest: bool,
    first_position: int,
    previous: tuple[Decimal, int] | None,
) -> list[RankedEntry]:
    """Ranks for consecutive listing entries.

    ``first_position`` is the 1-based listing position of ``entries[0]``; ``previous`` is
    the (score, rank) of the entry just before it, when there is one. With shared ranks
    ("1224") an entry whose score equals the one before takes its rank; otherwise the
    rank is the position (every member before it is strictly better).
    """
    ranked: list[RankedEntry] = []
    for offset, entry in enumerate(entries):
        position = first_position + offset
        if not earliest and previous is not None and previous[0] == entry.score:
            rank = previous[1]
        else:
            rank = position
        ranked.append(RankedEntry(rank=rank, member_id=entry.member_id, score=entry.score))
        previous = (entry.score, rank)
    return ranked


def around_window(before: Sequence[str], after: Sequence[str], radius: int) -> tuple[int, int]:
    """How many entries to take from ``before`` (nearest last) and ``after`` (nearest
    first) so that the window holds ``2·radius+1`` entries, shifting at the board's ends."""
    take_before = min(len(before), radius)
    take_after = min(len(after), radius)
    if take_before < radius:
        take_after = min(len(after), 2 * radius - take_before)
    if take_after < radius:
        take_before = min(len(before), 2 * radius - take_after)
    return take_before, take_after
