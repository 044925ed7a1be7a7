"""A model of a "set" board written and read concurrently, for the re-sharding tests: every
write is recorded with when it started and when it was acknowledged (a global sequence of
events), and every read with the sequence numbers bracketing it. A read is then checked
against what the board could hold while it ran: a member's shown score is one it had at the
read's start or was given by a write overlapping the read; a member that no write touched
during the read is where the model puts it. The listing order is the board's: higher is
better, ties by member id (``tieBreak: shared``)."""

from __future__ import annotations

import itertools
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal

from podium_client import Entry

ABSENT = None
Key = tuple[Decimal, str]  # (-score, member): sorts as the listing does


def key_of(member: str, score: Decimal) -> Key:
    return (-score, member)


@dataclass
class Write:
    started: int
    value: Decimal
    acknowledged: int | None = None  # None: in flight (or failed)


@dataclass
class BoardModel:
    """Members' scores and the writes that changed them."""

    initial: dict[str, Decimal]
    writes: dict[str, list[Write]] = field(default_factory=dict)
    _clock: itertools.count[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def now(self) -> int:
        with self._lock:
            return next(self._clock)

    def begin(self, member: str, value: Decimal) -> Write:
        with self._lock:
            write = Write(next(self._clock), value)
            self.writes.setdefault(member, []).append(write)
            return write

    def acknowledge(self, write: Write) -> None:
        with self._lock:
            write.acknowledged = next(self._clock)

    # -- what the board could show ------------------------------------------------------

    def value_at(self, member: str, moment: int) -> Decimal | None:
        """The member's score once every write acknowledged before ``moment`` is applied
        (writes of one member are sequential: one writer owns it)."""
        value = self.initial.get(member, ABSENT)
        for write in self.writes.get(member, []):
            if write.acknowledged is not None and write.acknowledged < moment:
                value = write.value
        return value

    def allowed(self, member: str, start: int, end: int) -> set[Decimal | None]:
        values = {self.value_at(member, start)}
        for write in self.writes.get(member, []):
            overlaps = write.started < end and (write.acknowledged is None or write.acknowledged > start)
            if overlaps:
                values.add(write.value)
        return values

    def final(self) -> dict[str, Decimal]:
        """Every member's score once all writes are acknowledged."""
        members = set(self.initial) | set(self.writes)
        values = {m: self.value_at(m, 1 << 62) for m in members}
        return {m: v for m, v in values.items() if v is not None}


class Snapshot:
    """The model over one read's bracket ``[start, end]``: the members no write touched
    (one sorted list of keys, for counts), and the touched members' possible scores."""

    def __init__(self, model: BoardModel, start: int, end: int, untouched: list[Key]) -> None:
        self.untouched = untouched
        self.touched: dict[str, set[Decimal | None]] = {
            member: model.allowed(member, start, end) for member in model.writes
        }
        self.initial = model.initial

    def allowed(self, member: str) -> set[Decimal | None]:
        if member in self.touched:
            return self.touched[member]
        return {self.initial.get(member, ABSENT)}

    def stable_between(self, low: Key | None, high: Key | None) -> set[str]:
        """The members surely listed strictly between ``low`` and ``high`` (None: open)."""
        first = 0 if low is None else bisect_right(self.untouched, low)
        last = len(self.untouched) if high is None else bisect_left(self.untouched, high)
        found = {member for _, member in self.untouched[first:last]}
        for member, values in self.touched.items():
            if len(values) == 1 and None not in values:
                key = key_of(member, next(iter(values)))  # type: ignore[arg-type]
                if (low is None or key > low) and (high is None or key < high):
                    found.add(member)
        return found

    def rank_bounds(self, score: Decimal) -> tuple[int, int]:
        """The least and greatest rank a score can have: one more than the members surely,
        or possibly, better."""
        better = bisect_left(self.untouched, (-score, ""))
        surely = possibly = better
        for values in self.touched.values():
            better_values = [v for v in values if v is not None and v > score]
            if better_values:
                possibly += 1
                if len(better_values) == len(values):
                    surely += 1
        return surely + 1, possibly + 1


def untouched_keys(model: BoardModel, touched: Iterable[str]) -> list[Key]:
    skip = set(touched)
    return sorted(key_of(m, s) for m, s in model.initial.items() if m not in skip)


def check_listing(
    snapshot: Snapshot,
    entries: Iterable[Entry],
    after: Key | None,
    complete: bool,
    where: str,
    window: bool = False,
) -> None:
    """A run of the listing after ``after``: unique members, in listing order, each with a
    score it could have, and every member surely between its ends present (all after
    ``after`` when ``complete``: the listing ended). A ``window`` (around a member) starts
    at its first entry instead."""
    shown = list(entries)
    keys = [key_of(e.member_id, e.score) for e in shown]
    assert keys == sorted(keys), f"{where}: out of order"
    assert len({e.member_id for e in shown}) == len(shown), f"{where}: a member shown twice"
    for entry in shown:
        assert entry.score in snapshot.allowed(entry.member_id), (
            f"{where}: {entry.member_id} shown at {entry.score}, could be {snapshot.allowed(entry.member_id)}"
        )
        assert after is None or key_of(entry.member_id, entry.score) > after, f"{where}: before the cursor"
    high = None if complete or not keys else keys[-1]
    low = keys[0] if window and keys else after
    if keys or complete:
        missing = snapshot.stable_between(low, high) - {e.member_id for e in shown}
        assert not missing, f"{where}: missing {sorted(missing)[:5]} ({len(missing)})"


def check_rank(snapshot: Snapshot, score: Decimal, rank: int, where: str) -> None:
    low, high = snapshot.rank_bounds(score)
    assert low <= rank <= high, f"{where}: rank {rank} for {score}, model says {low}..{high}"
