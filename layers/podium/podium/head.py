"""The head of a board: its best sort keys, kept by the stream, so a small top-k is one
GetItem instead of a scatter-gather over every shard.

The aggregating consumer applies each batch's score changes to the head of their board
and period: a member's old entry leaves, and its new key enters when it is better than
the head's last key (or when the head holds the whole board). The head keeps at most
``CAPACITY`` keys; when departures leave it unable to answer a full page it is refilled
from the ranking index. It lags writes by the stream's delay (about a second);
``consistent=true`` reads the index instead.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

SERVES_UP_TO = 100  # the largest `limit` a head answers (the API's promise)
CAPACITY = 128  # keys kept: room for departures before a refill
REFILL_BELOW = SERVES_UP_TO + 1  # a full page of 100 also needs to know whether a 101st exists

MemberOf = Callable[[str], str]


@dataclass(frozen=True)
class Head:
    keys: list[str]  # best first
    complete: bool  # True when the keys are every ranked member of the board
    version: int = 0
    members: dict[str, str] = field(default_factory=dict, compare=False)  # member id -> key

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
        return not self.complete and len(self.keys) < REFILL_BELOW


def from_index(keys: Sequence[str], member_of: MemberOf, version: int = 0) -> Head:
    """A head from the first ``CAPACITY + 1`` keys of the index (best first)."""
    kept = list(keys[:CAPACITY])
    return Head(kept, len(keys) <= CAPACITY, version, {member_of(k): k for k in kept})


def apply_change(head: Head, member_id: str, new_key: str | None, member_of: MemberOf) -> Head:
    """The head after ``member_id``'s sort key became ``new_key`` (None: it left)."""
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
    return Head(keys, complete, head.version, members)


def _insert(keys: list[str], key: str) -> None:
    from bisect import insort

    insort(keys, key)


def encode(keys: Sequence[str]) -> bytes:
    """Keys packed for the item: sort keys share long prefixes, so they compress well and
    a head of 128 keys stays far below the 8 KB that one eventually consistent RCU reads."""
    return zlib.compress("\n".join(keys).encode("utf-8"), 6)


def decode(blob: bytes) -> list[str]:
    text = zlib.decompress(blob).decode("utf-8")
    return text.split("\n") if text else []
