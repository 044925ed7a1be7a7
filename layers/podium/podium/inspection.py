"""What a board's rankings should hold, derived from its items with plain Python, and where
what is stored differs (``podium.consistency`` reads, repairs and reports).

The truth is the items a write makes: each member's profile (it exists, is hidden, or is
being deleted) and its score item in each period (score, reachedAt, version). Everything
else is derived, and each derived thing is compared with what it is derived *from*, so a
difference is named where it is and repairing it cannot be undone by the stream:

- **The ranking index** against the truth: every shown member with a score in the
  period carries, on its score item, exactly the index keys ``podium.keys.placement``
  gives (its shard's partition, the sort key of its score); a hidden member carries none
  and its score items say so (``hd``); no other item has an entry in the period's
  partitions. The index itself is read too, and must show what the items carry.
- **The head and the score buckets** against the sort keys the period's score items
  carry: that is what the stream derives them from, record by record. The head's keys
  are the first keys of that listing (all of them when it says it is complete); each
  bucket counts the keys in its range, the first starting below every key. The head's
  ladder is a hint that is allowed to drift (``podium.head``), and is not checked.
- **memberCount** against the profiles that are not hidden (one being deleted still
  counts, until its profile goes); **a period's count** (time-windowed boards) against the
  period's score items not marked hidden.

So a score item with a wrong sort key is one difference (the index), whose repair the
stream then carries to the head and the buckets; a bucket that lost a record is another.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

from podium import keys
from podium.dal import schema
from podium.dal.audit import BoardItems, IndexEntry, StoredProfile, StoredScore
from podium.models import BoardSettings, Bucket, HeadItem
from podium.periods import ALL_TIME

T = TypeVar("T")


class Kind(StrEnum):
    INDEX_MISSING = "index_missing"  # a shown member with a score is not in the index
    INDEX_WRONG_PARTITION = "index_wrong_partition"  # in the index, on the wrong shard (or board, period)
    INDEX_WRONG_SORT_KEY = "index_wrong_sort_key"  # in the index, at a key its score does not give
    INDEX_STRAY = "index_stray"  # an entry in the period's partitions that is no ranked member
    INDEX_LAG = "index_lag"  # the index does not show what an item carries (yet)
    HIDDEN_RANKED = "hidden_ranked"  # a hidden member is in the index
    HIDDEN_FLAG = "hidden_flag"  # a score item's hidden flag disagrees with the profile
    UNFINISHED_DELETE = "unfinished_delete"  # a profile still carries a delete's tombstone
    ORPHAN_SCORE = "orphan_score"  # a score item with no member
    SCORE_MISSING = "score_missing"  # a member of a never-resetting board with no score item
    HEAD = "head"
    BUCKETS = "buckets"
    MEMBER_COUNT = "member_count"
    PERIOD_COUNT = "period_count"


@dataclass(frozen=True)
class Difference:
    kind: Kind
    detail: str
    member_id: str | None = None

    def to_json(self) -> dict[str, str]:
        body = {"kind": str(self.kind), "detail": self.detail}
        if self.member_id is not None:
            body["memberId"] = self.member_id
        return body


@dataclass(frozen=True)
class BoardState:
    """What a check read of one board and period."""

    board_id: str
    settings: BoardSettings
    period: str
    items: BoardItems
    entries: list[IndexEntry]  # the index's entries in the period's shard partitions
    member_count: int | None  # as stored
    period_count: int | None  # as stored (None: no count item, or a never-resetting board)
    head: HeadItem | None
    buckets: list[Bucket]


@dataclass(frozen=True)
class Rewrite:
    """A score item to write again as the truth says: hidden or not, with its placement."""

    score: StoredScore
    hidden: bool


@dataclass
class Findings:
    differences: list[Difference] = field(default_factory=list)
    rewrites: list[Rewrite] = field(default_factory=list)
    orphans: list[StoredScore] = field(default_factory=list)
    unfinished_deletes: list[str] = field(default_factory=list)
    strays: list[IndexEntry] = field(default_factory=list)  # entries of items that are no member's score
    member_count: tuple[int | None, int] | None = None  # (as stored, as it should be)
    period_count: tuple[int | None, int] | None = None
    ranked: list[str] | None = None  # the keys to rebuild the head and buckets from, when they differ
    counts: dict[str, int] = field(default_factory=dict)  # what the board holds, for the report

    def add(self, kind: Kind, detail: str, member_id: str | None = None) -> None:
        self.differences.append(Difference(kind, detail, member_id))

    @property
    def through_stream(self) -> bool:
        """Whether a repair rewrites items whose change the stream carries to the head,
        the buckets and the counts (so a re-check waits for the stream)."""
        return bool(self.rewrites or self.orphans or self.unfinished_deletes)


def inspect(state: BoardState) -> Findings:
    found = Findings()
    period_scores = {s.member_id: s for s in state.items.scores if s.period == state.period}
    _members(state, period_scores, found)
    _hidden_elsewhere(state, found)
    _index(state, period_scores, found)
    # An item may be found twice (say, hidden but ranked, in another period's partitions):
    # it is written once.
    found.rewrites = _once(found.rewrites, lambda r: (r.score.member_id, r.score.period))
    found.orphans = _once(found.orphans, lambda o: (o.member_id, o.period))
    ranked = sorted(s.sort_key for s in period_scores.values() if s.sort_key is not None)
    describe = _describer(state.settings)
    structures_differ = _head(state.head, ranked, describe, found)
    structures_differ |= _buckets(state.buckets, ranked, describe, found)
    if structures_differ:
        found.ranked = ranked
    _counts(state, period_scores, found)
    profiles = state.items.profiles.values()
    found.counts = {
        "members": sum(1 for p in profiles if p.gone_us is None),
        "hidden": sum(1 for p in profiles if p.gone_us is None and p.hidden),
        "scores": len(period_scores),
        "indexEntries": len(state.entries),
        "headKeys": len(state.head.keys) if state.head is not None else 0,
        "buckets": len(state.buckets),
    }
    return found


def _members(state: BoardState, period_scores: dict[str, StoredScore], found: Findings) -> None:
    """Each member's score item in the period against its profile and its score."""
    profiles = state.items.profiles
    for member_id, profile in sorted(profiles.items()):
        if profile.gone_us is not None:
            found.add(
                Kind.UNFINISHED_DELETE,
                f"member {member_id} is being deleted (its profile carries the tombstone of a delete "
                f"begun at {profile.gone_us} µs), but the delete has not finished",
                member_id,
            )
            found.unfinished_deletes.append(member_id)
        elif state.period == ALL_TIME and member_id not in period_scores:
            found.add(
                Kind.SCORE_MISSING, f"member {member_id} has no score item: it is ranked nowhere", member_id
            )
    for member_id, stored in sorted(period_scores.items()):
        owner = profiles.get(member_id)
        if owner is None:
            where = f" (in the index at {stored.partition})" if stored.sort_key is not None else ""
            found.add(
                Kind.ORPHAN_SCORE,
                f"a score item of {member_id} in period {state.period}{where}, but no such member",
                member_id,
            )
            found.orphans.append(stored)
        elif owner.gone_us is None:
            _member(state, owner, stored, found)


def _once(items: list[T], key: Callable[[T], tuple[str, str]]) -> list[T]:
    """The items in order, each key's first only."""
    first: dict[tuple[str, str], T] = {}
    for item in items:
        first.setdefault(key(item), item)
    return list(first.values())


def _hidden_elsewhere(state: BoardState, found: Findings) -> None:
    """A hidden member is out of every ranking: its score items of the other periods carry
    no index keys either (the period checked is judged by ``_member``)."""
    for stored in state.items.scores:
        profile = state.items.profiles.get(stored.member_id)
        if stored.period == state.period or profile is None or profile.gone_us is not None:
            continue
        if profile.hidden and stored.sort_key is not None:
            found.add(
                Kind.HIDDEN_RANKED,
                f"member {stored.member_id} is hidden, but its score item in period {stored.period} "
                "is in the index",
                stored.member_id,
            )
            found.rewrites.append(Rewrite(stored, hidden=True))


def _member(state: BoardState, profile: StoredProfile, stored: StoredScore, found: Findings) -> None:
    member_id, period = profile.member_id, state.period
    carried = stored.sort_key is not None
    if profile.hidden:
        if carried:
            found.add(
                Kind.HIDDEN_RANKED,
                f"member {member_id} is hidden, but its score item in period {period} is in the index",
                member_id,
            )
        elif not stored.state.hidden:
            found.add(
                Kind.HIDDEN_FLAG,
                f"member {member_id} is hidden, but its score item in period {period} is not marked hidden",
                member_id,
            )
        else:
            return
        found.rewrites.append(Rewrite(stored, hidden=True))
        return
    if stored.state.hidden:
        found.add(
            Kind.HIDDEN_FLAG,
            f"member {member_id} is shown, but its score item in period {period} is marked hidden "
            "(so it is ranked nowhere)",
            member_id,
        )
        found.rewrites.append(Rewrite(stored, hidden=False))
        return
    want = keys.placement(state.board_id, state.settings, member_id, stored.state, period)
    score = f"score {stored.state.score}"
    if stored.sort_key is None or stored.partition is None:
        found.add(Kind.INDEX_MISSING, f"member {member_id} ({score}) is not in the ranking index", member_id)
    elif stored.partition != want.partition:
        found.add(
            Kind.INDEX_WRONG_PARTITION,
            f"member {member_id} is in index partition {stored.partition}, not {want.partition}",
            member_id,
        )
    elif stored.sort_key != want.sort_key:
        found.add(
            Kind.INDEX_WRONG_SORT_KEY,
            f"member {member_id} has index sort key {stored.sort_key!r}; its {score} gives {want.sort_key!r}",
            member_id,
        )
    else:
        return
    found.rewrites.append(Rewrite(stored, hidden=False))


def _index(state: BoardState, period_scores: dict[str, StoredScore], found: Findings) -> None:
    """The index's entries in the period's partitions against the items they come from."""
    own_prefix = schema.member_pk(state.board_id, "")
    score_sk = schema.score_sk(state.period)
    by_item = {(s.member_id, s.period): s for s in state.items.scores}
    shown: set[str] = set()
    for entry in state.entries:
        member_id = entry.pk[len(own_prefix) :] if entry.pk.startswith(own_prefix) else None
        stored = period_scores.get(member_id) if member_id is not None and entry.sk == score_sk else None
        if stored is not None:
            shown.add(stored.member_id)
            if (stored.partition, stored.sort_key) != (entry.partition, entry.sort_key):
                found.add(
                    Kind.INDEX_LAG,
                    f"the index shows {stored.member_id} at {entry.partition} {entry.sort_key!r}, "
                    f"its score item carries {stored.partition} {stored.sort_key!r} (the index trails "
                    "the table: is the board quiet?)",
                    stored.member_id,
                )
            continue  # the item's own keys were judged by _member
        other = None
        if member_id is not None and entry.sk.startswith(schema.SCORE):
            other = by_item.get((member_id, schema.period_of_score_sk(entry.sk)))
        found.add(
            Kind.INDEX_STRAY,
            f"an index entry in {entry.partition} ({entry.sort_key!r}) comes from item "
            f"{entry.pk} / {entry.sk}, which is no ranked member of period {state.period}",
            member_id,
        )
        if other is None:
            found.strays.append(entry)  # not a score item of this board: its keys are dropped
            continue
        # Another period's score item of this board, placed here: written again where its
        # own period and its profile say (a member being deleted loses it with the rest).
        profile = state.items.profiles.get(other.member_id)
        if profile is None:
            found.orphans.append(other)
        elif profile.gone_us is None:
            found.rewrites.append(Rewrite(other, hidden=profile.hidden))
    partitions = set(keys.partitions(state.board_id, state.settings, state.period))
    for stored in period_scores.values():
        if stored.partition in partitions and stored.sort_key is not None and stored.member_id not in shown:
            found.add(
                Kind.INDEX_LAG,
                f"the score item of {stored.member_id} carries index keys the index does not show "
                "(the index trails the table: is the board quiet?)",
                stored.member_id,
            )


Describe = Callable[[str], str]


def _describer(settings: BoardSettings) -> Describe:
    order = keys.order_of(settings)

    def describe(sort_key: str) -> str:
        try:
            score, member_id = order.parse(sort_key)
        except (ValueError, IndexError, ArithmeticError):
            return repr(sort_key)
        return f"{member_id} (score {score})"

    return describe


def _head(head: HeadItem | None, ranked: list[str], describe: Describe, found: Findings) -> bool:
    """The head against the listing of the keys the score items carry."""
    if head is None:
        if ranked:
            found.add(Kind.HEAD, f"there is no head item, and {len(ranked)} members are ranked")
            return True
        return False
    count = len(head.keys)
    if head.keys != ranked[:count]:
        position = next(
            (i for i, (a, b) in enumerate(zip(head.keys, ranked, strict=False)) if a != b),
            min(count, len(ranked)),
        )
        held = describe(head.keys[position]) if position < count else "nothing"
        truth = describe(ranked[position]) if position < len(ranked) else "nothing (the ranking ends)"
        found.add(
            Kind.HEAD, f"the head's position {position + 1} holds {held}; the ranking has {truth} there"
        )
        return True
    if head.complete and count != len(ranked):
        found.add(
            Kind.HEAD,
            f"the head says its {count} keys are the whole board, and {len(ranked)} members are ranked",
        )
        return True
    return False


def _buckets(layout: list[Bucket], ranked: list[str], describe: Describe, found: Findings) -> bool:
    """Each score bucket's count against the keys in its range."""
    if not layout:
        if ranked:
            found.add(Kind.BUCKETS, f"there are no score buckets, and {len(ranked)} members are ranked")
            return True
        return False
    differ = False
    if layout[0].lo != "":
        found.add(
            Kind.BUCKETS, f"the first score bucket starts at {describe(layout[0].lo)}, not below every key"
        )
        differ = True
    for index, bucket in enumerate(layout):
        start = bisect_left(ranked, bucket.lo)
        end = bisect_left(ranked, layout[index + 1].lo) if index + 1 < len(layout) else len(ranked)
        if bucket.count != end - start:
            where = "the start" if bucket.lo == "" else describe(bucket.lo)
            found.add(
                Kind.BUCKETS,
                f"score bucket {index + 1} of {len(layout)} (from {where}) counts {bucket.count}; "
                f"{end - start} ranked members are in its range",
            )
            differ = True
    return differ


def _counts(state: BoardState, period_scores: dict[str, StoredScore], found: Findings) -> None:
    want = sum(1 for p in state.items.profiles.values() if not p.hidden)
    if (state.member_count or 0) != want:
        found.add(
            Kind.MEMBER_COUNT,
            f"memberCount is {state.member_count}; the board has {want} members that are not hidden",
        )
        found.member_count = (state.member_count, want)
    if state.period == ALL_TIME:
        return
    want = sum(1 for s in period_scores.values() if not s.state.hidden)
    if (state.period_count or 0) != want:
        found.add(
            Kind.PERIOD_COUNT,
            f"the count of period {state.period} is {state.period_count or 0}; "
            f"{want} members that are not hidden have a score in it",
        )
        found.period_count = (state.period_count, want)
