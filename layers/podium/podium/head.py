"""The head of a board: its best sort keys, kept by the stream, so a small top-k is one
GetItem instead of a scatter-gather over every shard; and a *ladder* of keys sampled
further down, so that every other top read knows where to stop.

The aggregating consumer applies each batch's score changes to the head of their board
and period: a member's old entry leaves, and its new key enters when it is better than
the head's last key (or when the head holds the whole board). The head keeps at most
``CAPACITY`` keys; when departures leave it unable to answer a full page it is refilled
from the ranking index. It lags writes by the stream's delay (about a second);
``consistent=true`` reads the index instead.

**The ladder.** Past the head, one key every ``LADDER_STEP`` positions of the listing
down to ``LADDER_REACH``, each with the number of index keys that sort below it. A
change moves those counts by one (an arrival above a ladder key adds one, a departure
takes one); the keys themselves stay put, so the gaps between them widen and narrow,
and a ladder whose gaps have grown past ``2 · LADDER_STEP`` is read again from the index.
A top read that cannot be served from the head (a cursor, ``limit > 100``, or
``consistent=true``) asks the head and its ladder for a ``Hint``: a key with about
``limit`` keys and a margin between the cursor and it. Every shard's query then stops at
that key, so the read costs about ``limit`` keys instead of ``shards`` binomial pages.
The hint only sizes the read: ``ranking.gather_top`` is exact whatever it says, and a
stale hint costs a second round or some extra keys, never a wrong answer. A stream
record delivered twice moves the counts twice; that, too, only blunts the hint until
the ladder is next read (after ``LADDER_REREAD_AFTER`` changes at the latest).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import field, replace
from itertools import pairwise

from podium.keys import member_of_key
from podium.models import HeadItem
from podium.values import frozen

SERVES_UP_TO = 100  # the largest `limit` a head answers (the API's promise)
CAPACITY = 128  # keys kept: room for departures before a refill
REFILL_BELOW = SERVES_UP_TO + 1  # a full page of 100 also needs to know whether a 101st exists
LADDER_STEP = 16  # listing positions between two ladder keys
LADDER_REACH = 1536  # the ladder samples the listing down to this position (a top 1,000 and its margin)
LADDER_MAX_GAP = 2 * LADDER_STEP  # a wider gap (arrivals between two ladder keys) means a re-read
LADDER_REREAD_AFTER = 4 * LADDER_REACH  # changes applied before the ladder is read again anyway

MemberOf = Callable[[str], str]


@frozen
class Hint:
    """What the board's head expects a top read to need (``podium.head``): ``below``, a key
    with the ``limit`` keys sought and a margin between the cursor and it, or None when the
    listing ends before that; and ``expected``, the keys the head knows in that span (their
    members, hence their shards, are known). It may be stale: it only sizes the first round,
    and ``gather_top`` is exact whatever it says."""

    below: str | None
    expected: tuple[str, ...] = ()


def margin(limit: int) -> int:
    """How many keys past the ``limit`` sought a hint leaves room for: members that left
    the top since the head was written would otherwise cost a second round."""
    return limit // 4 + 1


@frozen
class Ladder:
    keys: tuple[str, ...]  # sampled sort keys, best first
    below: tuple[int, ...]  # for each, the number of index keys that sort below it
    total: int | None  # the number of keys in the index, when they all lie within reach
    changes: int = 0  # changes applied since the ladder was read from the index

    def moved(self, old_key: str | None, new_key: str | None) -> Ladder:
        """The ladder after one member's key went from ``old_key`` to ``new_key`` (None:
        absent before, or gone after)."""
        below = tuple(
            count + (new_key is not None and new_key < key) - (old_key is not None and old_key < key)
            for key, count in zip(self.keys, self.below, strict=True)
        )
        total = self.total
        if total is not None:
            total += (new_key is not None) - (old_key is not None)
        if below == self.below and total == self.total:
            return self
        return Ladder(self.keys, below, total, self.changes + 1)

    def is_worn(self, head_length: int) -> bool:
        """Whether the ladder should be read again: a gap between neighbouring samples
        (from the head's last key to the index's last) has grown too wide, the ladder no
        longer reaches a top 1,000, or it has absorbed many changes."""
        if self.changes >= LADDER_REREAD_AFTER:
            return True
        points = [head_length, *self.below, *([self.total] if self.total is not None else [])]
        if any(later - earlier > LADDER_MAX_GAP for earlier, later in pairwise(points)):
            return True
        return self.total is None and (not self.below or self.below[-1] < LADDER_REACH - LADDER_MAX_GAP)

    def at_most(self, after: str) -> int | None:
        """A count no smaller than the number of index keys up to ``after``: the count
        below the first sample past it (None: ``after`` lies past the ladder's reach)."""
        for key, count in zip(self.keys, self.below, strict=True):
            if key > after:
                return count
        return self.total

    def bound(self, position: int) -> tuple[bool, str | None]:
        """The first sample with at least ``position`` index keys below it: (True, key);
        (True, None) when the index ends before that; (False, None) when the ladder does
        not reach so far."""
        for key, count in zip(self.keys, self.below, strict=True):
            if count >= position:
                return True, key
        return self.total is not None, None


@frozen
class Head:
    keys: list[str]  # best first
    complete: bool  # True when the keys are every ranked member of the board
    version: int = 0
    members: dict[str, str] = field(default_factory=dict, compare=False)  # member id -> key
    ladder: Ladder | None = None  # None when the head is complete, or before a first read

    def page(self, limit: int) -> tuple[list[str], bool] | None:
        """The first ``limit`` keys and whether more follow, or None when the head
        cannot tell (it holds fewer keys than asked for and not the whole board)."""
        if limit > SERVES_UP_TO:
            return None
        if len(self.keys) > limit:
            return self.keys[:limit], True
        if self.complete:
            return list(self.keys), False
        return None

    @property
    def needs_refill(self) -> bool:
        """Whether to read the head (and its ladder) from the index again."""
        if self.complete:
            return False
        if len(self.keys) < REFILL_BELOW or self.ladder is None:
            return True
        return self.ladder.is_worn(len(self.keys))

    def hint(self, after: str | None, limit: int) -> Hint | None:
        """Where a read of ``limit`` keys after ``after`` can expect to stop (``Hint``), or
        None when neither the head nor its ladder reach that far."""
        want = limit + margin(limit)
        if after is None or self.complete or (self.keys and after <= self.keys[-1]):
            start = bisect_right(self.keys, after) if after is not None else 0
            if start + want < len(self.keys):
                return Hint(self.keys[start + want], tuple(self.keys[start : start + want]))
            expected = tuple(self.keys[start:])
            if self.complete:
                return Hint(None, expected)
            position: int | None = start  # exact: the head holds every key up to its last
        else:
            expected = ()
            position = self.ladder.at_most(after) if self.ladder is not None else None
        if position is None or self.ladder is None:
            return None
        reached, below = self.ladder.bound(position + want)
        return Hint(below, expected) if reached else None


def from_index(keys: Sequence[str], member_of: MemberOf, version: int = 0) -> Head:
    """A head, and its ladder, from the first keys of the index (best first): up to
    ``LADDER_REACH`` of them, and one more when more exist."""
    kept = list(keys[:CAPACITY])
    complete = len(keys) <= CAPACITY
    ladder = None
    if not complete:
        reach = min(len(keys), LADDER_REACH)
        positions = range(CAPACITY, reach, LADDER_STEP)
        ladder = Ladder(
            tuple(keys[p] for p in positions),
            tuple(positions),
            len(keys) if len(keys) <= LADDER_REACH else None,
        )
    return Head(kept, complete, version, {member_of(k): k for k in kept}, ladder)


def apply_change(
    head: Head, member_id: str, old_key: str | None, new_key: str | None, member_of: MemberOf
) -> Head:
    """The head after ``member_id``'s sort key went from ``old_key`` to ``new_key``
    (None: it was not ranked before, or it left)."""
    keys = list(head.keys)
    members = dict(head.members)
    old = members.pop(member_id, None)
    if old is not None:
        keys.remove(old)
    complete = head.complete
    if new_key is not None and (complete or (keys and new_key < keys[-1])):
        _insert(keys, new_key)
        members[member_id] = new_key
        if len(keys) > CAPACITY:
            dropped = keys.pop()
            del members[member_of(dropped)]
            complete = False
    ladder = head.ladder.moved(old_key, new_key) if head.ladder is not None else None
    return Head(keys, complete, head.version, members, ladder)


def same_content(one: Head, other: Head) -> bool:
    """Whether two heads say the same (a head that did not change is not written)."""
    return replace(one, version=0) == replace(other, version=0)


def _insert(keys: list[str], key: str) -> None:
    from bisect import insort

    insort(keys, key)


def read(item: HeadItem) -> Head:
    """The head as its item holds it (``podium.dal.codecs``)."""
    ladder = None
    if item.ladder is not None:
        keys, below, total, changes = item.ladder
        ladder = Ladder(keys, below, total, changes)
    return Head(item.keys, item.complete, item.version, {member_of_key(k): k for k in item.keys}, ladder)


def to_item(head: Head) -> HeadItem:
    ladder = head.ladder
    return HeadItem(
        head.keys,
        head.complete,
        head.version,
        (ladder.keys, ladder.below, ladder.total, ladder.changes) if ladder is not None else None,
    )
