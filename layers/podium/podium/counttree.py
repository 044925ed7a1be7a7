"""The count tree: exact ranks at a cost flat in board size and shard count
(docs/count-tree.md).

A rank counted from the index costs more with every member above, and a query on every
shard besides. The count tree holds the members' sort keys centrally instead, per board
and period, in a B-tree of small items: *leaves* hold the members of a key range
``[lo, hi)`` with their keys, *inner nodes* the counts of their children as last reported. A
count of the members below a key is then the counts on the path from the root to the
key's leaf, plus the leaf's keys below it: one read of a few items, whatever the board's
size.

**Versions instead of marks.** A member's entry carries the version ``(ci, v)`` of the
score item that put it there (``v`` one more on every write of the item, ``ci`` the time
its incarnation was created, so a deleted and re-created member starts above every record
of its past). A record puts the member's entry at the leaf of its new key unless that leaf
has seen the member at this version or a later one; it takes the entry out of the leaf of
its old key. In the usual order the old leaf holds exactly the entry the record's
predecessor left, ``(old key, (ci, v - 1))``; anything else (the member absent, or there at
another version) means records came out of order, and the leaf keeps a *tombstone* of the
member at the record's version, so that an older record cannot add it back. A member then
counts once, at the newest key the tree has seen, whatever the order of delivery, without
a per-record mark. The stream delivers a member's records in order, and again in order from
a failed one on; only a redrive replays a record after newer ones of its member, and a
leaf cannot tell whether the replay was applied before (and its member moved on since).
The consumer can, from the member's score item: a replay puts nothing once the item is
newer (``Change.superseded``), checked before it writes and after (``withdraw``).

**Counts reported, absolute and guarded.** A node's count goes to its parent with the
node's state version ``sv`` (one more on every write of it), and only over an older one:
reports never undo each other, and every count converges to its leaves' entries.

**Splits.** A node past its limits is cut at its middle key: the lower part keeps its
item, the upper part is a new one, and the parent gets both counts, in one transaction. The
root, whose item is fixed, moves its halves into two new nodes of its level and goes up one.

This module decides; ``podium.treepaths`` follows paths through the nodes;
``podium.treekeeper`` applies the decisions through a store
(``podium.ports.TreeStore``, kept in DynamoDB by ``podium.dal.tree``), ``podium.treereads``
counts, ``podium.treebuild`` builds a tree from its keys at once.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import field, replace

from podium.values import frozen

SEPARATOR = "#"  # what ends every sort key before its member id (podium.keys.SEPARATOR)

LEAF_MAX = 20  # a leaf past this many entries is split
FANOUT = 32  # an inner node past this many children is split
# ... or either past about this many bytes (``node_bytes``: its item with the keys and the
# other attributes, for a board id of about 30 characters), so that a write of a node is
# 1 WCU: a node split past 900 bytes was at most one entry or child past it, under 1 KB
# with member ids of up to about 80 characters. Entries and children are kept as short
# text (``entry_text``, ``child_text``), and the bounds between nodes are the shortest
# strings that separate their keys (``separator``): with 14-character member ids a leaf
# holds about 19 entries and an inner node 32 children in 1 KB.
NODE_BYTES = 900
# Tombstones stop records older than them; the stream keeps records 24 hours, and an hour
# more covers the clocks of the consumers and a redrive in flight.
TOMBSTONE_KEEP_S = 25 * 3600
BELOW_EVERY_KEY = ""  # the lower end of the first node of every level

# What a node's item holds besides its entries or children and its bounds (its keys, level,
# state version, TTL and the names of its attributes), and what DynamoDB adds to each
# element of a map besides its name and text: for the size limit, near enough.
NODE_FIXED_BYTES = 100
MAP_ELEMENT_BYTES = 1

Version = tuple[int, int]  # (ci, v), compared as a tuple
# A node is named by its level and its lower end; the root, whose level changes, by ROOT.
NodeId = tuple[int, str]
ROOT: NodeId = (-1, BELOW_EVERY_KEY)


@frozen
class Entry:
    """A member in a leaf: its sort key, and the version of the score item that put it."""

    key: str
    version: Version


@frozen
class Tombstone:
    """A member taken out of a leaf out of order: no record older than ``version`` may put
    it back. ``at`` (s) is when it was left; it goes after ``TOMBSTONE_KEEP_S``."""

    version: Version
    at: int


@frozen
class Count:
    """A child's count as last reported to its parent, and the child's ``sv`` then."""

    n: int
    sv: int


@frozen
class Leaf:
    """Level 0: the members whose sort keys fall in ``[lo, hi)`` (``hi`` None: to the end),
    by member id, and the tombstones of members that left out of order."""

    lo: str
    hi: str | None
    sv: int
    entries: Mapping[str, Entry] = field(default_factory=dict)
    tombstones: Mapping[str, Tombstone] = field(default_factory=dict)
    root: bool = False

    @property
    def level(self) -> int:
        return 0

    @property
    def total(self) -> int:
        return len(self.entries)


@frozen
class Inner:
    """Level >= 1: the counts of the children, by each child's lower end (the first child
    starts at the node's own ``lo``)."""

    level: int
    lo: str
    hi: str | None
    sv: int
    children: Mapping[str, Count] = field(default_factory=dict)
    root: bool = False

    @property
    def total(self) -> int:
        return sum(count.n for count in self.children.values())


Node = Leaf | Inner


# -- the nodes as text (their items' compact form: docs/count-tree.md, "Items") -----------
#
# An entry is ``ci.v.key``: the score item's version in base 36, then the sort key, whose
# member id at the end (every sort key of the service ends with ``#`` and the member id) is
# left out, marked ``+`` (``=``: the whole key follows). A tombstone is ``ci.v.at``. A
# child is ``sv.n``: its state version in a form whose text order is its number order
# (``ordered``), so that a report's condition "the recorded version is older" is a string
# comparison, then the count.

_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def base36(number: int) -> str:
    if number < 0:
        raise ValueError(f"a count tree number is never negative: {number}")
    text = ""
    while True:
        number, digit = divmod(number, 36)
        text = _DIGITS[digit] + text
        if not number:
            return text


def ordered(number: int) -> str:
    """``number`` as text that sorts as the number does: its base-36 digits after a letter
    that says how many there are."""
    digits = base36(number)
    return chr(ord("A") + len(digits) - 1) + digits


def entry_text(member: str, entry: Entry) -> str:
    ci, v = entry.version
    suffix = SEPARATOR + member
    key = f"+{entry.key[: -len(member)]}" if entry.key.endswith(suffix) else f"={entry.key}"
    return f"{base36(ci)}.{base36(v)}.{key}"


def entry_of(member: str, text: str) -> Entry:
    ci, v, key = text.split(".", 2)
    return Entry(key[1:] + member if key[0] == "+" else key[1:], (int(ci, 36), int(v, 36)))


def tombstone_text(stone: Tombstone) -> str:
    ci, v = stone.version
    return f"{base36(ci)}.{base36(v)}.{base36(stone.at)}"


def tombstone_of(text: str) -> Tombstone:
    ci, v, at = text.split(".")
    return Tombstone((int(ci, 36), int(v, 36)), int(at, 36))


def child_text(count: Count) -> str:
    return f"{ordered(count.sv)}.{base36(count.n)}"


def child_of(text: str) -> Count:
    sv, n = text.split(".")
    return Count(int(n, 36), int(sv[1:], 36))


def separator(below: str, above: str) -> str:
    """The shortest string ``s`` with ``below < s <= above``: a prefix of ``above`` (a
    bound between two nodes need only separate their keys, and short bounds keep the
    parent small)."""
    if not below < above:
        raise ValueError(f"nothing separates {below!r} from {above!r}")
    for end in range(1, len(above) + 1):
        if above[:end] > below:
            return above[:end]
    return above


def ident(node: Node) -> NodeId:
    return ROOT if node.root else (node.level, node.lo)


def holds(node: Node, key: str) -> bool:
    return node.lo <= key and (node.hi is None or key < node.hi)


def child_for(node: Inner, key: str) -> NodeId:
    """The child of ``node`` whose range holds ``key``: the one with the greatest lower end
    not above it."""
    bounds = sorted(node.children)
    return (node.level - 1, bounds[max(0, bisect_right(bounds, key) - 1)])


# -- applying a record ------------------------------------------------------------------


@frozen
class Change:
    """A stream record as the tree sees it: ``member``'s sort key from ``old`` to ``new``
    (None: not ranked), the score item's version after it (a removal's is the removed
    item's ``v`` + 1), and the consumer's clock (s). ``superseded``: a replayed record whose
    member's score item is newer (a newer record puts the member where it belongs)."""

    member: str
    old: str | None
    new: str | None
    version: Version
    now: int
    superseded: bool = False

    @property
    def previous(self) -> Version:
        """The version of the entry the record's predecessor left (every write adds one)."""
        ci, v = self.version
        return (ci, v - 1)

    def touched(self) -> list[str]:
        """The keys whose leaves the record changes, the old one first."""
        return list(dict.fromkeys(k for k in (self.old, self.new) if k is not None))


@frozen
class Outcome:
    """What a record leaves of its member in one leaf, and whether the leaf was as the
    record's predecessor left it (``in_order``: otherwise the record may be a redelivery,
    and its counts are reported all the way to the root)."""

    entry: Entry | None
    tombstone: Tombstone | None
    in_order: bool


def decide(leaf: Leaf, change: Change) -> Outcome:
    """What ``change`` does to ``leaf``, a leaf that holds its old key, its new key or both.

    Nothing, when the leaf has seen the member at this version or a later one (the record
    was applied here before, or a newer one was). Else at the new key, the member's entry
    (over any older one: a move within the leaf). Else the member leaves: without a trace
    when the leaf held exactly what the predecessor left, with a tombstone otherwise (out of
    order: an older record might still come). A superseded record puts nothing: the newer
    record puts the member where it belongs. Nor does it leave its own entry there (put by
    an earlier attempt of the replay that died or started again before taking it back, or
    by the record's first delivery): the leaf has "seen" the version only through that
    entry, and the newer records may have passed the leaf before it landed (then nothing
    else takes it out) or not (then they find the member gone, as out of order)."""
    member = change.member
    current, stone = member_state(leaf, member)
    seen = max((x.version for x in (current, stone) if x is not None), default=None)
    if seen is not None and seen >= change.version:
        if change.superseded and change.new is not None and current == Entry(change.new, change.version):
            return Outcome(None, stone, in_order=False)
        return Outcome(current, stone, in_order=False)
    predecessor = (
        Entry(change.old, change.previous) if change.old is not None and holds(leaf, change.old) else None
    )
    in_order = current == predecessor and stone is None and not change.superseded
    if change.new is not None and holds(leaf, change.new) and not change.superseded:
        return Outcome(Entry(change.new, change.version), None, in_order)
    if current is not None and current == predecessor:
        return Outcome(None, None, in_order)
    return Outcome(None, Tombstone(change.version, change.now), in_order=False)


def withdraw(leaf: Leaf, change: Change) -> Outcome:
    """A replayed record's entry taken back, when the member's score item turned out newer
    after the entry was written: the newer record may have taken the member out of the leaf
    (in the usual order, without a trace) before the replay's entry landed."""
    current, stone = member_state(leaf, change.member)
    if change.new is not None and current == Entry(change.new, change.version):
        return Outcome(None, None, in_order=False)
    return Outcome(current, stone, in_order=False)


def newer(newest: Version | None, version: Version) -> bool:
    """Whether a member's score item (its version now; None: gone) is past ``version``."""
    return newest is None or newest > version


def member_state(leaf: Leaf, member: str) -> tuple[Entry | None, Tombstone | None]:
    return leaf.entries.get(member), leaf.tombstones.get(member)


def expired(leaf: Leaf, now: int, keep: str | None = None) -> tuple[str, ...]:
    """The members whose tombstones are past keeping (but ``keep``'s, which a write sets)."""
    return tuple(
        sorted(m for m, stone in leaf.tombstones.items() if m != keep and stone.at + TOMBSTONE_KEEP_S < now)
    )


@frozen
class InOrder:
    """What an optimistic leaf write expects: the member's entry is ``was`` (None: the leaf
    has neither an entry nor a tombstone of it), and the leaf holds ``key`` (None: no key to
    check; an entry is always within its leaf)."""

    was: Entry | None
    key: str | None


@frozen
class LeafWrite:
    """One write of one leaf: the member's entry and tombstone set as given (None: none),
    the ``drop`` members' tombstones removed, ``sv`` one more, on the condition ``expect``:
    what the usual order leaves (InOrder), or the ``sv`` the write was decided on."""

    leaf: NodeId
    member: str
    entry: Entry | None
    tombstone: Tombstone | None
    expect: InOrder | int
    drop: tuple[str, ...] = ()


def in_order_write(leaf: NodeId, change: Change, holds_old: bool, holds_new: bool) -> LeafWrite:
    """The write of a record arriving in the usual order, decided without reading the leaf."""
    was = Entry(change.old, change.previous) if holds_old and change.old is not None else None
    entry = Entry(change.new, change.version) if holds_new and change.new is not None else None
    return LeafWrite(leaf, change.member, entry, None, InOrder(was, change.new if holds_new else None))


def settling_write(leaf_id: NodeId, leaf: Leaf, change: Change, outcome: Outcome) -> LeafWrite | None:
    """The write that carries ``outcome`` out on ``leaf`` as read (None: nothing changes),
    dropping the tombstones past keeping on the way."""
    if (outcome.entry, outcome.tombstone) == member_state(leaf, change.member):
        return None
    drop = expired(leaf, change.now, keep=change.member)
    return LeafWrite(leaf_id, change.member, outcome.entry, outcome.tombstone, leaf.sv, drop)


def sweeping_write(leaf_id: NodeId, leaf: Leaf, member: str, now: int) -> LeafWrite | None:
    """A write that only drops the tombstones past keeping (None: there are none)."""
    drop = expired(leaf, now, keep=member)
    if not drop:
        return None
    entry, stone = member_state(leaf, member)
    return LeafWrite(leaf_id, member, entry, stone, leaf.sv, drop)


# -- splits -------------------------------------------------------------------------------


@frozen
class Put:
    """A node written whole by a split, on the condition that its item still has the ``sv``
    it was read with (None: that there is no such item yet)."""

    node: Node
    was: int | None


def node_bytes(node: Node) -> int:
    """About the size of the node's item (its bounds are in its sort key too)."""
    size = NODE_FIXED_BYTES + 2 * len(node.lo) + len(node.hi or "")
    if isinstance(node, Leaf):
        size += sum(entry_bytes(m, e) for m, e in node.entries.items())
        return size + sum(
            len(m) + MAP_ELEMENT_BYTES + len(tombstone_text(t)) for m, t in node.tombstones.items()
        )
    return size + sum(child_bytes(lo, count) for lo, count in node.children.items())


def entry_bytes(member: str, entry: Entry) -> int:
    return len(member) + MAP_ELEMENT_BYTES + len(entry_text(member, entry))


def child_bytes(lo: str, count: Count) -> int:
    return 1 + len(lo) + MAP_ELEMENT_BYTES + len(child_text(count))  # its name is ``k`` + lo


def overfull(node: Node) -> bool:
    """Whether the node is past its limits (and can be cut: it has two parts at least). A
    leaf's tombstones do not count: both parts keep them, and they go within a day."""
    if isinstance(node, Leaf):
        parts, most, size = len(node.entries), LEAF_MAX, node_bytes(replace(node, tombstones={}))
    else:
        parts, most, size = len(node.children), FANOUT, node_bytes(node)
    return parts >= 2 and (parts > most or size > NODE_BYTES)


def split(node: Node, parent: Inner | None, now: int) -> list[Put]:
    """The writes that cut ``node`` at its middle key, as read (``parent`` as read too;
    None when ``node`` is the root). Tombstones go to both parts: a tombstone stops any older
    record of its member whose key the leaf held."""
    lower, upper = _halves(node, now)
    if node.root:
        lower, upper = replace(lower, root=False, sv=1), upper
        counts = {lower.lo: Count(lower.total, lower.sv), upper.lo: Count(upper.total, upper.sv)}
        root = Inner(node.level + 1, BELOW_EVERY_KEY, None, node.sv + 1, counts, root=True)
        return [Put(lower, None), Put(upper, None), Put(root, node.sv)]
    if parent is None:
        raise ValueError("a node other than the root is split with its parent")
    children = {
        **parent.children,
        lower.lo: Count(lower.total, lower.sv),
        upper.lo: Count(upper.total, upper.sv),
    }
    return [
        Put(lower, node.sv),
        Put(upper, None),
        Put(replace(parent, sv=parent.sv + 1, children=children), parent.sv),
    ]


def _halves(node: Node, now: int) -> tuple[Node, Node]:
    """The node cut at its middle key: the lower part (its own item, one write on) and the
    upper part (a new item)."""
    if isinstance(node, Leaf):
        by_key = sorted(node.entries.items(), key=lambda item: item[1].key)
        middle = by_key[len(by_key) // 2][1].key
        stones = {m: s for m, s in node.tombstones.items() if m not in expired(node, now)}
        below = {m: e for m, e in by_key if e.key < middle}
        above = {m: e for m, e in by_key if e.key >= middle}
        # the shortest bound between the two halves' keys: the parent keeps it, and short
        # bounds keep the parent under 1 KB
        cut = separator(max(e.key for e in below.values()), middle) if below else middle
        lower: Node = replace(node, hi=cut, sv=node.sv + 1, entries=below, tombstones=stones)
        return lower, Leaf(cut, node.hi, 1, above, dict(stones))
    bounds = sorted(node.children)
    cut = bounds[len(bounds) // 2]
    below_children = {lo: node.children[lo] for lo in bounds if lo < cut}
    above_children = {lo: node.children[lo] for lo in bounds if lo >= cut}
    lower = replace(node, hi=cut, sv=node.sv + 1, children=below_children)
    return lower, Inner(node.level, cut, node.hi, 1, above_children)
