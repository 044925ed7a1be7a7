"""Score buckets: rank on a board of any size in a bounded number of reads, exactly,
however busy the board.

Rank by COUNT (the reference pattern) reads every index entry above a member: a member
ranked 1,000,000th costs thousands of RCU. Instead the aggregating stream consumer keeps,
per board and period, a partition of the index's sort-key space into *buckets* (ranges
``[lo, next bucket's lo)``), each with the number of members whose sort key falls in it.
A rank is then

    1 + (the counts of the buckets above the member's bucket)
      + COUNT(index entries in the member's bucket that are better than the member)

which reads the bucket items up to the member's bucket (one query) and at most one
bucket's worth of index keys per shard (one round of queries), however deep the rank.

**Counted by the stream.** Every change of a sort key moves one from the bucket of the
old key to the bucket of the new one, once per stream record. A bucket that has only ever
been counted that way (the first bucket of a board, counted from empty) is exact as of
the records applied.

**Splitting without losing exactness.** A bucket past ``SPLIT_AT`` members is split at
keys that cut it into parts of about ``REBUILD_SIZE`` (two at least, ``MAX_PIECES`` at
most), and the parts' counts must come from the index: the stream has no record of which
part each member is in. A scan of the index is not a moment of
the stream, though: it may show writes the consumer has not applied yet (the stream
trails the index), and miss writes it has applied (the index trails the table by up to
``INDEX_LAG_US``). So a split takes two steps:

1. *Start* (``start_split``): the bucket records the cut keys and the time ``T0``, and its
   epoch moves, so that from then on every record applied to it also records, per member,
   which part (or none) its new key falls in (the bucket's *parts*).
2. *Finish* (``finish_split``, at least ``SETTLE_US`` after ``T0``): the bucket's range is
   scanned. Every record applied before ``T0`` was written before it, so the scan shows it.
   A member with a record applied since ``T0`` is counted in the part its parts say (the
   stream's view); every other member in the part the scan shows it in (which may be a
   write the stream has not brought yet). The new buckets replace the old one in one
   transaction, conditional on nothing having been applied to it since it was read.

**Records the scan already showed.** After a finish, a record written before the scan
ended (``snapshot_end_us``, give or take ``SKEW_US`` of clock skew) may still arrive, and
the scan may already hold it: applying it again would count it twice. For such a record a
bucket takes the member's *old* membership not from the record's old key but from what
the bucket's count assumes: the member's entry in the bucket's *moved* map if a record
has set it since, else whether the scan showed it there (the bucket's *snapshot*, a set
of member hashes kept in an item of its own). Its new membership is the record's new key,
and the moved map records it. A record written after the scan cannot be in it, and every
earlier record of its member was applied before it (a stream keeps one item's records in
order), so for it the old key is the truth; within one more ``SKEW_US`` (a later record
of the member may carry an earlier time) the moved map still records it. Then each
member counts once, in the bucket of the last key the counts have seen, and a bucket's
count equals the index entries in its range once the stream has caught up. ``steps``
decides all of it; a property test replays random histories (index lag, late and repeated
records, splits at any moment) against a plain sorted list.
"""

from __future__ import annotations

import base64
import hashlib
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from podium.keys import just_below as just_below  # for the bucket upkeep, until it goes
from podium.models import Bucket, BucketStep

SPLIT_AT = 1024  # a bucket past this many members is split
MAX_PIECES = 16  # the most parts one split cuts a bucket into
REBUILD_SIZE = 768  # members per bucket when rebuilt from the index: between a split's halves and SPLIT_AT
INDEX_LAG_US = 1_000_000  # how far the index may trail a write (DynamoDB: "typically < 1 s")
SKEW_US = 1_000_000  # how far the writers' and the consumers' clocks may differ
SETTLE_US = INDEX_LAG_US + SKEW_US + 1_000_000  # from a split's start to its scan, at least
BELOW_EVERY_KEY = ""  # the first bucket's lower bound

OUT = 0  # a key outside a splitting bucket; inside, its part is numbered from 1


def in_window(bucket: Bucket, written_us: int) -> bool:
    """Whether the bucket's last scan may already show a change written at ``written_us``."""
    return bucket.snapshot_end_us > 0 and written_us <= bucket.snapshot_end_us + SKEW_US


def in_band(bucket: Bucket, written_us: int) -> bool:
    """Whether a change written at ``written_us``, past the window, may still be followed
    by one of the same member stamped inside it (its writers' clocks differ)."""
    return bucket.snapshot_end_us > 0 and written_us <= bucket.snapshot_end_us + 2 * SKEW_US


def part(bucket: Bucket, key: str | None, high: str | None) -> int:
    """Which part of a splitting bucket holds ``key`` (1 for the first; OUT when the bucket
    does not: ``high`` is its exclusive upper end)."""
    if key is None or key < bucket.lo or (high is not None and key >= high):
        return OUT
    return 1 + bisect_right(bucket.cuts, key)


@dataclass(frozen=True)
class Change:
    """A stream record as the buckets see it: a member's key from ``old`` to ``new`` (None:
    absent), judged against scans by ``written_us``: the latest reachedAt the record
    carries (of the new score, else of the one removed, since a removal's own time is
    rounded to the second). Of one member's records, a later one may carry an earlier
    time only by the writers' clock skew, at most ``SKEW_US``."""

    member: str  # member_hash of the member id
    old: str | None
    new: str | None
    written_us: int


class Knows(Protocol):
    """What a bucket in its scan window knows of the member a record is about."""

    def scanned(self, bucket: Bucket) -> bool:
        """Whether the bucket's last scan showed the member in it."""
        ...

    def moved(self, bucket: Bucket) -> int | None:
        """The member's entry in the bucket's moved map (None: none)."""
        ...


def member_hash(member_id: str) -> str:
    """A member's 64-bit fingerprint, as the moved maps and snapshots name it."""
    digest = hashlib.blake2b(member_id.encode("utf-8"), digest_size=8).digest()
    return base64.b64encode(digest).decode("ascii").rstrip("=")


def steps(buckets: Sequence[Bucket], change: Change, knows: Knows) -> list[BucketStep]:
    """What ``change`` does to the buckets of its old and new keys (those it changes).

    A bucket takes the member's old membership from what its count has of the member
    when its last scan may show the change (in its window: ``knows`` is asked), else from
    the record's old key. In the window the moved map always records the new membership,
    on the condition that the entry is what was read. Past the window, in the band where a
    later record of the member could still be stamped inside it, the moved map records the
    new membership too, so that such a record finds the count's view there.

    Only the buckets of the two keys can change. A bucket whose scan showed the member at a
    key the stream has not brought yet counts it already; the record that brings that key
    has its new key in the bucket, and finds it counted there (no change). A scan that
    showed the member at a key older than the stream's did so only for a member whose
    later records reached the bucket during its split, which its moved map holds."""
    found = []
    for index in sorted({locate(buckets, key) for key in (change.old, change.new) if key is not None}):
        bucket = buckets[index]
        high = upper_bound(buckets, index)
        inside_old = _inside(change.old, bucket.lo, high)
        inside_new = _inside(change.new, bucket.lo, high)
        moved, moved_was, checked = None, None, True
        if in_window(bucket, change.written_us):
            moved_was = knows.moved(bucket)
            was = moved_was if moved_was is not None else int(knows.scanned(bucket))
            moved = int(inside_new)
        else:
            was = int(inside_old)
            if in_band(bucket, change.written_us):
                moved, checked = int(inside_new), False
        where = part(bucket, change.new, high) if bucket.splitting else None
        delta = int(inside_new) - was
        if delta or moved is not None or where is not None:
            found.append(BucketStep(bucket, delta, moved, moved_was, checked, where))
    return found


def _inside(key: str | None, lo: str, high: str | None) -> bool:
    return key is not None and key >= lo and (high is None or key < high)


def choose_cuts(keys: Sequence[str]) -> tuple[str, ...]:
    """Where to cut a bucket holding the sorted ``keys``: into parts of about
    ``REBUILD_SIZE`` (two at least, ``MAX_PIECES`` at most), each cut a key that the part
    after it starts at; none when it cannot be cut."""
    pieces = min(MAX_PIECES, len(keys), max(2, -(-len(keys) // REBUILD_SIZE)))
    if pieces < 2:
        return ()
    return tuple(keys[len(keys) * i // pieces] for i in range(1, pieces))


def split_counts(
    scanned: dict[str, int], parts: dict[str, int], pieces: int
) -> tuple[list[int], list[dict[str, int]]]:
    """The parts of a split: from the scan (member -> its part) and the parts the stream
    recorded since the split started (member -> OUT or its part, which win), each part's
    count and its moved map (the recorded members, 1 in that part, else 0)."""
    where = {**scanned, **parts}
    counts = [sum(1 for part in where.values() if part == piece) for piece in range(1, pieces + 1)]
    moved = [{member: int(part == piece) for member, part in parts.items()} for piece in range(1, pieces + 1)]
    return counts, moved


def locate(buckets: Sequence[Bucket], key: str) -> int:
    """The index of the bucket whose range holds ``key`` (buckets sorted by ``lo``, the
    first one starting below every key)."""
    position = bisect_right([b.lo for b in buckets], key) - 1
    if position < 0:
        raise ValueError("the first bucket must start below every key")
    return position


def upper_bound(buckets: Sequence[Bucket], index: int) -> str | None:
    """The exclusive upper end of bucket ``index`` (None for the last bucket)."""
    return buckets[index + 1].lo if index + 1 < len(buckets) else None


def cut(keys: Sequence[str], size: int = REBUILD_SIZE) -> list[tuple[str, int]]:
    """Buckets of ``size`` members over the sorted ``keys`` of a whole board, as
    ``(lo, count)``; the first starts below every key."""
    buckets: list[tuple[str, int]] = []
    for start in range(0, max(len(keys), 1), size):
        lo = BELOW_EVERY_KEY if start == 0 else keys[start]
        buckets.append((lo, len(keys[start : start + size])))
    return buckets
