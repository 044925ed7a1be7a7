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
- **The head and the count tree** against the sort keys the period's score items carry
  (the index as the items put it): that is what the stream derives them from, record by
  record. The head's keys are the first keys of that listing (all of them when it says it
  is complete); the tree's leaves hold exactly those members, each once, at its key, in
  the leaf whose range holds it, and every inner node counts what its children hold,
  over ranges that cover the keys once (``_tree``). The head's ladder is a hint that is
  allowed to drift (``podium.head``), and is not checked.
- **memberCount** against the profiles that are not hidden (one being deleted still
  counts, until its profile goes); **a period's count** (time-windowed boards) against the
  period's score items not marked hidden.

So a score item with a wrong sort key is a difference of the index, whose repair the
stream then carries to the head and the tree; a tree that lost a record is another.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

from podium import keys
from podium.counttree import BELOW_EVERY_KEY, ROOT, Entry, Inner, Leaf, Node, NodeId, holds, ident
from podium.dal import schema
from podium.dal.audit import BoardItems, IndexEntry, StoredProfile, StoredScore
from podium.models import BoardSettings, HeadItem
from podium.periods import ALL_TIME
from podium.values import frozen

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
    TREE = "tree"  # the count tree: a member held wrongly, a count or a range off, not built
    MEMBER_COUNT = "member_count"
    PERIOD_COUNT = "period_count"


@frozen
class Difference:
    kind: Kind
    detail: str
    member_id: str | None = None

    def to_json(self) -> dict[str, str]:
        body = {"kind": str(self.kind), "detail": self.detail}
        if self.member_id is not None:
            body["memberId"] = self.member_id
        return body


@frozen
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
    tree: list[Node]  # every node of the period's count tree
    head_copies: tuple[HeadItem | None, ...] = ()  # the head's copies (podium.dal.structures)


@frozen
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
    # What the head and the tree are rebuilt from, when they differ: each ranked member's
    # key and version, as its score item holds them.
    ranked: dict[str, Entry] | None = None
    counts: dict[str, int] = field(default_factory=dict)  # what the board holds, for the report

    def add(self, kind: Kind, detail: str, member_id: str | None = None) -> None:
        self.differences.append(Difference(kind, detail, member_id))

    @property
    def through_stream(self) -> bool:
        """Whether a repair rewrites items whose change the stream carries to the head,
        the tree and the counts (so a re-check waits for the stream)."""
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
    structures_differ |= _head_copies(state.head, state.head_copies, found)
    structures_differ |= _tree(state, period_scores, describe, found)
    if structures_differ:
        found.ranked = {
            s.member_id: Entry(s.sort_key, (s.state.created_us, s.state.version))
            for s in period_scores.values()
            if s.sort_key is not None
        }
    _counts(state, period_scores, found)
    profiles = state.items.profiles.values()
    found.counts = {
        "members": sum(1 for p in profiles if p.gone_us is None),
        "hidden": sum(1 for p in profiles if p.gone_us is None and p.hidden),
        "scores": len(period_scores),
        "indexEntries": len(state.entries),
        "headKeys": len(state.head.keys) if state.head is not None else 0,
        "treeNodes": len(state.tree),
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
            carried = stored.partition_in(state.settings.index)
            where = f" (in the index at {carried})" if stored.sort_key is not None else ""
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
    partition = stored.partition_in(state.settings.index)  # the index the board reads
    if stored.sort_key is None or partition is None:
        found.add(Kind.INDEX_MISSING, f"member {member_id} ({score}) is not in the ranking index", member_id)
    elif partition != want.partition:
        found.add(
            Kind.INDEX_WRONG_PARTITION,
            f"member {member_id} is in index partition {partition}, not {want.partition}",
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
            carried = stored.partition_in(state.settings.index)
            if (carried, stored.sort_key) != (entry.partition, entry.sort_key):
                found.add(
                    Kind.INDEX_LAG,
                    f"the index shows {stored.member_id} at {entry.partition} {entry.sort_key!r}, "
                    f"its score item carries {carried} {stored.sort_key!r} (the index trails "
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
        carried = stored.partition_in(state.settings.index)
        if carried in partitions and stored.sort_key is not None and stored.member_id not in shown:
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


def _head_copies(head: HeadItem | None, copies: tuple[HeadItem | None, ...], found: Findings) -> bool:
    """Each copy of the head (which the top reads read) against the primary: on a quiet
    board none is missing or behind; the rebuild writes them all again."""
    primary = (head.version, head.keys, head.complete) if head is not None else None
    stale = [
        (n, c) for n, c in enumerate(copies) if primary and (c and (c.version, c.keys, c.complete)) != primary
    ]
    for copy, held in stale:
        holds = f"version {held.version}" if held else "no head"
        found.add(
            Kind.HEAD, f"the head's copy {copy} holds {holds}, the primary {head.version if head else 0}"
        )
    return bool(stale)


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


def _tree(
    state: BoardState, period_scores: dict[str, StoredScore], describe: Describe, found: Findings
) -> bool:
    """The count tree against the keys the period's score items carry, member by member,
    and its nodes against each other (``_shape``)."""
    ranked = {s.member_id: s.sort_key for s in period_scores.values() if s.sort_key is not None}
    nodes = {ident(node): node for node in state.tree}
    if ROOT not in nodes:
        if not ranked and not nodes:
            return False  # no member has come yet
        found.add(Kind.TREE, f"the count tree has no root, and {len(ranked)} members are ranked")
        return True
    reached, differ = _shape(nodes, describe, found)
    held: dict[str, list[tuple[Leaf, Entry]]] = {}
    for leaf in (node for node in reached if isinstance(node, Leaf)):
        for member, entry in leaf.entries.items():
            held.setdefault(member, []).append((leaf, entry))
    for member in sorted(held.keys() | ranked.keys()):
        wrong = _held_wrongly(member, held.get(member, []), ranked.get(member), describe)
        if wrong is not None:
            found.add(Kind.TREE, wrong, member)
            differ = True
    return differ


def _held_wrongly(
    member: str, held: list[tuple[Leaf, Entry]], key: str | None, describe: Describe
) -> str | None:
    """What is wrong with how the tree holds ``member`` (None: nothing), whose score item
    carries ``key`` (None: none, it is not ranked)."""
    if not held:
        return None if key is None else f"the count tree does not hold {describe(key)}"
    if len(held) > 1:
        return f"the count tree holds {member} {len(held)} times"
    leaf, entry = held[0]
    if key is None:
        return f"the count tree holds {describe(entry.key)}, which no score item of the period carries"
    if entry.key != key:
        return f"the count tree holds {describe(entry.key)}; its score item carries {describe(key)}"
    if not holds(leaf, key):
        return f"the count tree holds {describe(key)} in a leaf whose range does not hold its key"
    return None


def _shape(nodes: dict[NodeId, Node], describe: Describe, found: Findings) -> tuple[list[Node], bool]:
    """The nodes reached from the root, and whether any differs from what a read assumes:
    the root covers every key; each inner node's children exist, one level down, cover its
    range once (the first from its own lower end, each up to the next, the last to its
    end), and are counted as they hold; every node is reached."""
    differ = False

    def differs(detail: str) -> None:
        nonlocal differ
        found.add(Kind.TREE, detail)
        differ = True

    root = nodes[ROOT]
    if root.lo != BELOW_EVERY_KEY or root.hi is not None:
        differs("the count tree's root does not cover every key")
    reached: dict[NodeId, Node] = {}
    pending = [root]
    while pending:
        node = pending.pop()
        reached[ident(node)] = node
        if not isinstance(node, Inner):
            continue
        name = _node_name(node)
        bounds = sorted(node.children)
        if bounds[:1] != [node.lo]:
            differs(f"{name}'s first child does not start where it does")
        for lo, end in zip(bounds, [*bounds[1:], node.hi], strict=True):
            child = nodes.get((node.level - 1, lo))
            if child is None or ident(child) in reached:
                differs(f"{name} counts a child from {describe(lo)} that is not there")
                continue
            if (child.lo, child.hi) != (lo, end):
                differs(f"{_node_name(child)} does not end where {name} has its next child start")
            if node.children[lo].n != child.total:
                differs(
                    f"{name} counts {node.children[lo].n} members under {_node_name(child)}, "
                    f"which holds {child.total}"
                )
            pending.append(child)
    if len(reached) < len(nodes):
        differs(f"{len(nodes) - len(reached)} nodes of the count tree are reached from no node above them")
    return list(reached.values()), differ


def _node_name(node: Node) -> str:
    if node.root:
        return "the count tree's root"
    start = repr(node.lo) if node.lo else "the first key"  # a bound: a separator of keys, seldom a key
    return f"the count tree's node of level {node.level} from {start}"


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
