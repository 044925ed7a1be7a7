"""Score buckets as reads count from them: the counts of ranges ``[lo, next bucket's lo)``
of the index's sort keys, plus a read inside the bucket of each bound.

The stream no longer keeps buckets: the count tree (``podium.counttree``,
docs/count-tree.md) replaces them as the structure ranks are counted from, and what is
left here goes once reads count from the tree. A board whose buckets were never built
(every board from now on) has none, and is counted from the index. The open bounds of
index reads (``just_below``, ``just_above``) stay.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from podium.models import Bucket

SPLIT_AT = 1024  # the most members a bucket held before it was split
BELOW_EVERY_KEY = ""  # the first bucket's lower bound


def just_below(key: str) -> str:
    """The greatest string that sorts below ``key`` among index sort keys, for an
    inclusive ``BETWEEN``: sort keys are ASCII, so after the lowered last character a
    single U+10FFFF (the highest code point, and the highest UTF-8 bytes) outranks
    whatever follows in any key."""
    if not key:
        raise ValueError("no key sorts below the empty string")
    return key[:-1] + chr(ord(key[-1]) - 1) + "\U0010ffff"


def just_above(key: str) -> str:
    """A string above ``key`` with no index sort key between them, for an exclusive lower
    end of a ``BETWEEN``: a key that sorts above ``key`` either differs from it at some
    character or extends it, and every character of a sort key is above the space."""
    return key + " "


def locate(buckets: Sequence[Bucket], key: str) -> int:
    """The index of the bucket whose range holds ``key`` (buckets sorted by ``lo``, the
    first one starting below every key)."""
    position = bisect_right([b.lo for b in buckets], key) - 1
    if position < 0:
        raise ValueError("the first bucket must start below every key")
    return position


@dataclass(frozen=True)
class CountPlan:
    """How to count the index entries below each of some sorted bounds: bound ``i`` has
    ``counted[i]`` entries in the buckets wholly below it, plus the entries of
    ``reads[within[i]]`` from its own bucket's start (``starts[i]``) up to it. A read is a
    range ``(lo, hi)`` from the start of a bucket up to (not including) the greatest bound
    it serves, read on every shard; each bucket that holds bounds is read once, whatever
    the number of bounds in it, and a read may run over several such buckets and those
    between them (``within[i]`` is None: nothing to read)."""

    counted: list[int]
    reads: list[tuple[str, str]]
    within: list[int | None]
    starts: list[str]
    # How many of the plan's bounds each read serves, and whether it spans buckets.
    serves: list[int]
    spans: list[bool]
    # What the reads are expected to cost (``read_cost`` of their entries; 0 without one).
    units: float = 0.0


ReadCost = Callable[[float], float]


def plan_counts(
    buckets: Sequence[Bucket], bounds: Sequence[str], read_cost: ReadCost | None = None
) -> CountPlan:
    """The plan for the sorted ``bounds``. ``buckets`` are the board's buckets from the
    first one up to (at least) the bucket holding the greatest bound.

    ``read_cost(n)`` is what one read of about ``n`` index entries costs (a query on every
    shard, each billed at least one block): the plan then groups the buckets that hold
    bounds into the reads of least total cost, exactly (by dynamic programming over the
    buckets in key order, since a read is a contiguous range: grouping two buckets reads
    the buckets between them, and saves one round of per-shard minimums). A read is
    expected to cover its buckets wholly but for the part of its last bucket past its
    greatest bound (about the bucket's count over one more than the bounds in it). Without
    ``read_cost`` each bucket that holds bounds is read on its own."""
    counted: list[int] = []
    starts: list[str] = []
    own: list[int | None] = []  # the bucket to read for each bound (None: nothing to read)
    running, passed = 0, 0
    for bound in bounds:
        index = locate(buckets, bound)
        while passed < index:
            running += buckets[passed].count
            passed += 1
        counted.append(running)
        starts.append(buckets[index].lo)
        own.append(None if bound == buckets[index].lo else index)
    touched = sorted({index for index in own if index is not None})
    in_bucket = {index: sum(1 for o in own if o == index) for index in touched}
    prefix = [0]
    for bucket in buckets:
        prefix.append(prefix[-1] + bucket.count)

    def entries(first: int, last: int) -> float:
        """The entries a read from bucket ``touched[first]`` through ``touched[last]`` reads."""
        end = touched[last]
        tail = buckets[end].count // (in_bucket[end] + 1)
        return prefix[end + 1] - prefix[touched[first]] - tail

    # best[i]: the least cost of reads covering touched[:i]; begin[i]: where its last read starts
    best = [0.0] + [math.inf] * len(touched)
    begin = [0] * (len(touched) + 1)
    for last in range(len(touched)):
        firsts = range(last + 1) if read_cost is not None else (last,)
        for first in firsts:
            total = best[first] + (read_cost(entries(first, last)) if read_cost is not None else 0.0)
            if total < best[last + 1]:
                best[last + 1], begin[last + 1] = total, first
    groups: list[tuple[int, int]] = []
    end = len(touched)
    while end > 0:
        groups.append((begin[end], end - 1))
        end = begin[end]
    groups.reverse()
    reads: list[tuple[str, str]] = []
    serves: list[int] = []
    spans: list[bool] = []
    read_of: dict[int, int] = {}
    for number, (first, last) in enumerate(groups):
        greatest = max(
            b
            for b, o in zip(bounds, own, strict=True)
            if o is not None and touched[first] <= o <= touched[last]
        )
        reads.append((buckets[touched[first]].lo, greatest))
        serves.append(sum(in_bucket[touched[i]] for i in range(first, last + 1)))
        spans.append(first != last)
        read_of.update({touched[i]: number for i in range(first, last + 1)})
    within = [read_of[o] if o is not None else None for o in own]
    return CountPlan(counted, reads, within, starts, serves, spans, best[-1])
