"""A board's layout while a re-shard moves it: which shard count writes place members at,
and which partitions a read must cover, at a given moment (docs/capacity.md, "Re-sharding").

Every instance keeps a board's layout for at most ``Timing.cache`` (``BoardService``), so a
change to it is seen everywhere within that time. A move from F to T shards goes:

1. ``startedAt``: the board says so. Readers that see it read the union ``range(max(F, T))``
   at once; writers keep placing at F, as the instances that have not seen it yet do.
2. ``startedAt + switch``: every instance has seen the move, so every reader reads the
   union; writers place at T from now on.
3. ``startedAt + begin``: the backfill starts moving items from F's partitions to T's. A
   writer placing at F now (a request that began before the switch, a stale instance) is
   put right by the aggregator, which sees every score item change.
4. ``endedAt``: ``shards`` is T. Readers keep reading the union for ``linger`` more (an
   instance may still hold the moving layout, and a shrink leaves items on partitions >= T
   only until the stream's fix-ups are done), then ``range(T)``.

The partition keys of both layouts are the same strings (shard 2 of 3 is shard 2 of 17), and
a score item has one ``rpk`` at any time, so reading ``range(max(F, T))`` finds each member
once however far the move has gone."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from podium.keys import shard_of
from podium.models import BoardSettings, Reshard

DEFAULT_CACHE_SECONDS = 5
MARGIN = timedelta(seconds=2)  # a request's time between reading its layout and writing


@dataclass(frozen=True)
class Timing:
    """How long an instance keeps a layout, and the steps of a move that follow from it."""

    cache: timedelta = timedelta(seconds=DEFAULT_CACHE_SECONDS)

    @property
    def switch(self) -> timedelta:
        """After ``startedAt``: writers place at the new count."""
        return self.cache + MARGIN

    @property
    def begin(self) -> timedelta:
        """After ``startedAt``: the backfill may move items (writes placed at the old count
        before the switch have reached the index by then)."""
        return self.switch + MARGIN

    @property
    def linger(self) -> timedelta:
        """After ``endedAt``: reads still cover both layouts' partitions."""
        return self.cache + MARGIN


def effective(
    settings: BoardSettings, reshard: Reshard | None, now: datetime, timing: Timing
) -> BoardSettings:
    """The settings a request made at ``now`` places and reads by: ``shards`` is where
    writes go, ``moving`` (when set) the two layouts whose partitions reads cover."""
    if reshard is None:
        return settings
    moving = (reshard.from_shards, reshard.to_shards)
    if reshard.ended_at is None:
        switched = now >= reshard.started_at + timing.switch
        writes = reshard.to_shards if switched else reshard.from_shards
        return replace(settings, shards=writes, moving=moving)
    if now < reshard.ended_at + timing.linger:
        return replace(settings, shards=reshard.to_shards, moving=moving)
    return settings


def may_begin(reshard: Reshard, now: datetime, timing: Timing) -> bool:
    """May the backfill move items yet: has every writer placed at the new count?"""
    return reshard.ended_at is None and now >= reshard.started_at + timing.begin


def is_settled(reshard: Reshard | None, now: datetime, timing: Timing) -> bool:
    """Is no move on, and no instance reading by an old layout: may another move start?"""
    return reshard is None or (reshard.ended_at is not None and now >= reshard.ended_at + timing.linger)


def destination(member_id: str, shard: int, to_shards: int) -> int | None:
    """The shard a member found on ``shard`` moves to under ``to_shards``; None: it stays."""
    target = shard_of(member_id, to_shards)
    return None if target == shard else target


def source_shards(reshard: Reshard) -> range:
    """The partitions the backfill walks: the old layout's. Members placed since the switch
    are at the new count already, and the aggregator fixes the late ones wherever they are."""
    return range(reshard.from_shards)
