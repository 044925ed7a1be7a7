"""A board's layout while a re-shard moves it: which ranking index reads use, and which index
keys writes set, at a given moment (docs/capacity.md, "Re-sharding").

A board's score items are keyed in one of two indexes (``podium.models.RANK_INDEXES``), on
``shards`` shards. A re-shard builds the other index on the new count and switches reads to
it, the reference architecture's partition-key migration: add a key, backfill it, switch
reads, drop the old key. A member's key in the new index depends on its id and the new
count only, so setting it never races a score write (which changes ``rsk``, followed by
both indexes). At any moment a reader reads ONE complete index with ONE layout, in which no
entry moves: every read is exact.

Every instance keeps a board's layout for at most ``Timing.cache``, and a request runs at
most ``Timing.margin`` after reading it, so each phase is entered only ``Timing.wait`` after
the one before, when every write made by an older layout is in:

1. STARTED (``startedAt``): reads use the old index; writes set both keys.
2. COPYING (``startedAt + wait``): the same, and the worker gives every item the new key.
3. SWITCHED (``switchedAt``, once every item has it): reads use the new index; writes still
   set both keys (an instance that has not seen the switch reads the old one, whole).
4. CLEANING (``switchedAt + wait``): writes set the new key only; the worker removes the
   old key from every item, and the move ends (``endedAt``)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta
from enum import Enum

from podium.models import BoardSettings, Reshard, other_index
from podium.values import frozen

DEFAULT_CACHE_SECONDS = 5
DEFAULT_MARGIN_SECONDS = 30  # API Gateway gives up on a request at 29 s


class Phase(Enum):
    STARTED = "started"
    COPYING = "copying"
    SWITCHED = "switched"
    CLEANING = "cleaning"
    ENDED = "ended"


@frozen
class Timing:
    """How long an instance keeps a layout, and how long a request may run on one."""

    cache: timedelta = timedelta(seconds=DEFAULT_CACHE_SECONDS)
    margin: timedelta = timedelta(seconds=DEFAULT_MARGIN_SECONDS)

    @property
    def wait(self) -> timedelta:
        """Between two phases: every instance has seen the first, every request made by
        an older layout has ended."""
        return self.cache + self.margin


def phase(reshard: Reshard, now: datetime, timing: Timing) -> Phase:
    """The phase a move is in at ``now``, as every instance that has read it works out."""
    if reshard.ended_at is not None:
        return Phase.ENDED
    if reshard.switched_at is not None:
        return Phase.SWITCHED if now < reshard.switched_at + timing.wait else Phase.CLEANING
    return Phase.STARTED if now < reshard.started_at + timing.wait else Phase.COPYING


def effective(
    settings: BoardSettings, reshard: Reshard | None, now: datetime, timing: Timing
) -> BoardSettings:
    """The settings a request made at ``now`` reads and writes by: ``index`` and ``shards``
    (as stored: the old index until the switch, the new one after) for reads, and ``also``
    the other index's layout, whose key writes set too until the clean-up begins."""
    if reshard is None:
        return settings
    now_phase = phase(reshard, now, timing)
    if now_phase in (Phase.STARTED, Phase.COPYING):
        return replace(settings, also=(other_index(reshard.from_index), reshard.to_shards))
    if now_phase is Phase.SWITCHED:
        return replace(settings, also=(reshard.from_index, reshard.from_shards))
    return settings


def may_copy(reshard: Reshard, now: datetime, timing: Timing) -> bool:
    """May the worker give items the new key: does every writer set it?"""
    return phase(reshard, now, timing) is Phase.COPYING


def may_clean(reshard: Reshard, now: datetime, timing: Timing) -> bool:
    """May the worker remove the old key: has every writer stopped setting it, and every
    reader stopped reading the old index (a request that began in SWITCHED has ended)?"""
    return reshard.switched_at is not None and now >= reshard.switched_at + timing.wait + timing.margin


def is_settled(reshard: Reshard | None, now: datetime, timing: Timing) -> bool:
    """Is no move on, and has every instance seen the last one end: may another start (its
    new index is the one the last move emptied)?"""
    return reshard is None or (reshard.ended_at is not None and now >= reshard.ended_at + timing.wait)
