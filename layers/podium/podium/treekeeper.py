"""Keeping the count tree from the stream (docs/count-tree.md): each record applied to the
leaves of its keys, its counts reported towards the root, nodes split as they fill.

Every step is one conditional request to the store (``podium.ports.TreeStore``), so that
consumers of different members, and a redrive, interleave freely, and a consumer that
dies between two steps leaves the tree as a reader may meet it, one change behind:

- **a leaf** is written optimistically, on the condition that it holds what the record's
  predecessor left (the usual order); when that fails, the leaf as the failed write found
  it decides (``counttree.decide``) and is written on the condition that its ``sv`` did not
  move, again until it holds.
- **a report** sets the child's count and ``sv`` in its parent over an older ``sv`` only.
  The reports of one record go up a level at a time, those for one parent in one request
  (the two leaves of a move meet at their lowest common ancestor, whose total does not
  change: nothing goes higher). A node goes on to its parent when a write of ours changed
  its total; a report that finds a newer one there goes on with the parent as it is (its
  writer may have died before reporting it further); a record that met a leaf out of order
  (maybe a redelivery after such a death) reports all the way to the root.
- **a split** reads the parent strongly consistent and writes the cut node, its new sibling
  and the parent in one transaction, on the condition that neither was written since.

A batch from the stream (``apply_batch``) is written to its leaves a record at a time, in
the stream's order, and its reports are sent once for the whole batch: each node's newest
state, a level at a time, those for one parent in one request. If they fail, every record of
the batch fails: redelivered, each finds its own entry and reports all the way to the root.

A record replayed out of the stream's order (a redrive) is checked against its member's
score item before it writes, and after: once the item is newer, it puts nothing, and takes
back what it put (``counttree.withdraw``).

A write that finds the tree's shape other than it guessed (a split moved a key, the root
went up a level) starts the record again from a fresh read of the path: every step is
guarded, so doing one again changes nothing it should not.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from podium.counttree import (
    ROOT,
    Change,
    Count,
    Inner,
    Leaf,
    Node,
    NodeId,
    Outcome,
    Version,
    child_for,
    decide,
    holds,
    ident,
    in_order_write,
    newer,
    overfull,
    settling_write,
    split,
    sweeping_write,
    withdraw,
)
from podium.ports import TreeStore
from podium.treepaths import Shape
from podium.values import frozen

MAX_ATTEMPTS = 16  # starts of one record over, after the shape changed under it
MAX_WRITES = 32  # writes of one leaf or splits of one node overtaken by other writers
SHAPES_CACHED = 64  # boards and periods whose shape a keeper remembers

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")


class Gather(Protocol):
    """How a batch's independent steps run: ``fanout.gather_writes``, or ``in_turn``."""

    def __call__(self, function: Callable[[T], R], items: Sequence[T]) -> list[R]: ...


# The member's score item's version now (None: there is none), read for a replayed record.
Newest = Callable[[], Version | None]
Judge = Callable[[Leaf, Change], Outcome]


class ShapeChanged(Exception):
    """The tree is not shaped as guessed: read the path again."""


@frozen
class Tree:
    """Which tree: a board's, in one period, and when its items expire (None: never)."""

    board_id: str
    period: str
    expires: int | None = None


@frozen
class Pending:
    """A node whose state goes to its parent: its ``level``, its count and ``sv``, and
    whether the report goes on to the root even where totals do not change."""

    level: int
    count: Count
    full: bool


def enqueue(pending: dict[NodeId, Pending], node_id: NodeId, report: Pending) -> None:
    """Add a report, keeping the newest state of a node reported twice (the root has no
    parent to report to)."""
    if node_id == ROOT:
        return
    known = pending.get(node_id)
    if known is not None:
        newest = report.count if report.count.sv > known.count.sv else known.count
        report = Pending(report.level, newest, report.full or known.full)
    pending[node_id] = report


def to_the_root(pending: dict[NodeId, Pending]) -> dict[NodeId, Pending]:
    """The same reports, each going all the way to the root."""
    return {node_id: replace(report, full=True) for node_id, report in pending.items()}


def in_turn(function: Callable[[T], R], items: Sequence[T]) -> list[R]:
    return [function(item) for item in items]


class TreeKeeper:
    def __init__(self, store: TreeStore, gather: Gather | None = None) -> None:
        """``gather`` runs a batch's independent steps (each member's records, each
        parent's report of a level): at once (``fanout.gather_writes``, the stream
        consumer's), as two consumers' steps meet, or in turn (the default)."""
        self.store = store
        self.gather: Gather = gather or in_turn
        self._shapes: dict[tuple[str, str], Shape] = {}

    def shape(self, tree: Tree) -> Shape:
        key = (tree.board_id, tree.period)
        if key not in self._shapes and len(self._shapes) >= SHAPES_CACHED:
            self._shapes.clear()
        return self._shapes.setdefault(key, Shape())

    def apply(self, tree: Tree, change: Change, newest: Newest | None = None) -> None:
        """Apply one record to the tree, and report what it changed. ``newest`` is given
        for a record replayed out of the stream's order: it reads the member's score item."""
        if not change.touched():
            return
        for attempt in range(MAX_ATTEMPTS):
            if newest is not None:  # read again on every attempt: the writers go on
                change = replace(change, superseded=newer(newest(), change.version))
            try:
                self._report(tree, self._write(tree, change, newest))
                return
            except ShapeChanged:  # the paths of the record, then all if that was not it
                self.shape(tree).forget(change.touched() if attempt == 0 else None)
        raise RuntimeError(f"the count tree of {tree.board_id} keeps changing shape: retrying the record")

    def apply_batch(self, tree: Tree, changes: Sequence[Change]) -> set[int]:
        """Apply a batch of records from the stream, in its order, to their leaves, then
        report the batch's counts once, a node at a time: a parent takes one report for all
        the records that changed its children, not one per record. The positions of the
        records that failed (all of them when the reports fail: their redelivery meets its
        own entries and reports all the way to the root, as a record's does after a crash
        between its leaf and its reports).

        A member with several records in the batch is the exception: its later records
        leave no trace of the earlier ones (a join then a leave, in the usual order), so a
        redelivery of the batch meets the leaves as the first delivery did, in the usual
        order, and its reports, net zero, would stop below a node the dead delivery changed
        but never reported. Such records report all the way to the root every time."""
        pending: dict[NodeId, Pending] = {}
        failed: set[int] = set()
        repeated = {m for m, n in Counter(change.member for change in changes).items() if n > 1}
        by_member: dict[str, list[int]] = {}
        for position, change in enumerate(changes):
            by_member.setdefault(change.member, []).append(position)

        def member_records(positions: list[int]) -> tuple[list[dict[NodeId, Pending]], list[int]]:
            """One member's records, in the stream's order (the members at once: records of
            different members meet in the tree as two consumers' do)."""
            written_all, failed_here = [], []
            for position in positions:
                change = changes[position]
                try:
                    written = self._written(tree, change)
                    written_all.append(to_the_root(written) if change.member in repeated else written)
                except Exception:
                    log.exception("a record of the count tree of %s failed", tree.board_id)
                    failed_here.append(position)
            return written_all, failed_here

        for written_all, failed_here in self.gather(member_records, list(by_member.values())):
            for written in written_all:
                for report_id, report in written.items():
                    enqueue(pending, report_id, report)
            failed.update(failed_here)
        try:
            self._report_all(tree, pending)
        except Exception:
            log.exception("the reports of a batch to the count tree of %s failed", tree.board_id)
            return set(range(len(changes)))
        return failed

    def _written(self, tree: Tree, change: Change) -> dict[NodeId, Pending]:
        """One record's leaf writes (and splits), started again on a fresh path when the
        shape changed; what they leave to report."""
        if not change.touched():
            return {}
        for attempt in range(MAX_ATTEMPTS):
            try:
                return self._write(tree, change, None)
            except ShapeChanged:
                self.shape(tree).forget(change.touched() if attempt == 0 else None)
        raise RuntimeError(f"the count tree of {tree.board_id} keeps changing shape: retrying the record")

    def _report_all(self, tree: Tree, pending: dict[NodeId, Pending]) -> None:
        """Report a batch's pending nodes. When the shape changed under them, forget it and
        report them all again, all the way to the root: every report is guarded by ``sv``,
        so what was reported already is refused, and goes on from the parent as it is."""
        for attempt in range(MAX_ATTEMPTS):
            try:
                self._report(tree, dict(pending) if attempt == 0 else to_the_root(pending))
                return
            except ShapeChanged:
                self.shape(tree).forget()
        raise RuntimeError(f"the count tree of {tree.board_id} keeps changing shape: retrying the batch")

    def _write(self, tree: Tree, change: Change, newest: Newest | None) -> dict[NodeId, Pending]:
        """A record's leaf writes (and the splits they call for); the nodes whose state goes
        to their parents."""
        leaves: dict[NodeId, list[str]] = {}
        for key in change.touched():
            leaves.setdefault(self._path(tree, key)[-1], []).append(key)
        written = {
            leaf_id: self._write_leaf(tree, leaf_id, keys, change, replay=newest is not None)
            for leaf_id, keys in leaves.items()
        }
        if (
            newest is not None
            and change.new is not None
            and not change.superseded
            and newer(newest(), change.version)
        ):
            leaf_id = next(i for i, keys in leaves.items() if change.new in keys)
            found = self._read(tree, leaf_id)
            written[leaf_id] = self._settle(tree, leaf_id, [change.new], change, found, withdraw, full=True)
        pending: dict[NodeId, Pending] = {}
        for leaf_id, (leaf, changed, full) in written.items():
            if overfull(leaf):
                self._split(tree, leaf_id, leaf, full, pending, change.now)
            elif changed or full:
                enqueue(pending, leaf_id, Pending(0, Count(leaf.total, leaf.sv), full))
        return pending

    # -- the leaves -----------------------------------------------------------------------

    def _write_leaf(
        self, tree: Tree, leaf_id: NodeId, keys: list[str], change: Change, *, replay: bool
    ) -> tuple[Leaf, bool, bool]:
        """The leaf after the record's write (as it is, when the record changes nothing
        there), whether its count changed, and whether its counts go all the way up. A
        record from the stream is written optimistically; a replay decides on the leaf
        read, and reports all the way (it may have been applied, in part, before)."""
        holds_old, holds_new = change.old in keys, change.new in keys
        if replay:
            found = self._read(tree, leaf_id)
        else:
            done, found = self.store.write_leaf(
                tree.board_id, tree.period, in_order_write(leaf_id, change, holds_old, holds_new)
            )
            if done:
                leaf = self._checked(found, keys)
                return self._swept(tree, leaf_id, leaf, change), holds_old != holds_new, False
        return self._settle(tree, leaf_id, keys, change, found, decide, full=replay)

    def _settle(
        self,
        tree: Tree,
        leaf_id: NodeId,
        keys: list[str],
        change: Change,
        found: Node | None,
        judge: Judge,
        *,
        full: bool,
    ) -> tuple[Leaf, bool, bool]:
        """Write what ``judge`` decides on the leaf as last found, on the condition that it
        did not change since, until a write holds (or nothing is to be written)."""
        for _ in range(MAX_WRITES):
            leaf = self._checked(found, keys)
            outcome = judge(leaf, change)
            write = settling_write(leaf_id, leaf, change, outcome)
            if write is None:
                return leaf, False, True
            done, found = self.store.write_leaf(tree.board_id, tree.period, write)
            if done:
                after = self._checked(found, keys)
                return after, after.total != leaf.total, full or not outcome.in_order
        raise RuntimeError(f"a leaf of the count tree of {tree.board_id} is too busy: retrying the record")

    @staticmethod
    def _checked(found: Node | None, keys: list[str]) -> Leaf:
        """``found`` as the leaf of ``keys``, or ShapeChanged (a split moved a key away, the
        root is no longer a leaf, the shape guessed a leaf that does not exist)."""
        if not isinstance(found, Leaf) or not all(holds(found, key) for key in keys):
            raise ShapeChanged
        return found

    def _swept(self, tree: Tree, leaf_id: NodeId, leaf: Leaf, change: Change) -> Leaf:
        """The leaf without its tombstones past keeping, if a write can drop them now (they
        arise out of order, and an optimistic write cannot see them)."""
        write = sweeping_write(leaf_id, leaf, change.member, change.now)
        if write is None:
            return leaf
        done, found = self.store.write_leaf(tree.board_id, tree.period, write)
        return found if done and isinstance(found, Leaf) else leaf

    # -- splits ---------------------------------------------------------------------------

    def _split(
        self, tree: Tree, node_id: NodeId, node: Node, full: bool, pending: dict[NodeId, Pending], now: int
    ) -> None:
        """Split ``node`` (as last seen), and its parent in turn if that fills it. The split
        gives the parent both parts' counts, so its own state goes up next. A node that
        others keep writing is reported as it is instead: a later write splits it."""
        for _ in range(MAX_WRITES):
            if not overfull(node):
                break
            parent = None if node.root else self._parent_of(tree, node)
            puts = split(node, parent, now)
            if self.store.replace(tree.board_id, tree.period, puts, tree.expires):
                self.shape(tree).learn(put.node for put in puts)
                if parent is None:
                    return
                written = puts[-1].node
                parent_id = ident(written)
                if overfull(written):
                    self._split(tree, parent_id, written, full, pending, now)
                elif written.total != parent.total or full:
                    enqueue(
                        pending, parent_id, Pending(written.level, Count(written.total, written.sv), full)
                    )
                return
            found = self._read(tree, node_id)
            if found is None or found.level != node.level or found.root != node.root:
                raise ShapeChanged
            node = found
        enqueue(pending, node_id, Pending(node.level, Count(node.total, node.sv), full))

    def _parent_of(self, tree: Tree, node: Node) -> Inner:
        """The parent of ``node`` (not the root), read strongly consistent."""
        found = self._read(tree, self._path(tree, node.lo, node.level + 1)[-1])
        if not isinstance(found, Inner) or found.level != node.level + 1 or node.lo not in found.children:
            raise ShapeChanged
        return found

    # -- reports --------------------------------------------------------------------------

    def _report(self, tree: Tree, pending: dict[NodeId, Pending]) -> None:
        """Report the pending nodes, a level at a time from the lowest, those of one parent
        in one request."""
        while pending:
            level = min(report.level for report in pending.values())
            here = {node_id: report for node_id, report in pending.items() if report.level == level}
            groups: dict[NodeId, dict[NodeId, Pending]] = {}
            for node_id, report in here.items():
                del pending[node_id]
                parent_id = self._path(tree, node_id[1], level + 1)[-1]
                groups.setdefault(parent_id, {})[node_id] = report
            # the parents of a level at once: each report is one parent's request
            reports = [(tree, parent_id, level + 1, children) for parent_id, children in groups.items()]
            for found in self.gather(self._reported, reports):
                for node_id, report in found.items():
                    enqueue(pending, node_id, report)

    def _reported(self, report: tuple[Tree, NodeId, int, dict[NodeId, Pending]]) -> dict[NodeId, Pending]:
        """One parent's report (``_report_to``): what it leaves to report above."""
        found: dict[NodeId, Pending] = {}
        tree, parent_id, level, children = report
        self._report_to(tree, parent_id, level, children, found)
        return found

    def _report_to(
        self,
        tree: Tree,
        parent_id: NodeId,
        level: int,
        children: dict[NodeId, Pending],
        pending: dict[NodeId, Pending],
    ) -> None:
        counts = {child_id[1]: report.count for child_id, report in children.items()}
        full = any(report.full for report in children.values())
        done, node = self.store.report(tree.board_id, tree.period, parent_id, level, counts)
        if (
            not isinstance(node, Inner)
            or node.level != level
            or not all(lo in node.children for lo in counts)
        ):
            raise ShapeChanged
        if done:
            after = replace(node, sv=node.sv + 1, children={**node.children, **counts})
            self.shape(tree).learn([after])
            if after.total != node.total or full:
                enqueue(pending, parent_id, Pending(level, Count(after.total, after.sv), full))
        elif len(children) > 1:  # some of them may still be newer than what the parent has
            self._report_newer(tree, parent_id, level, children, node, pending)
        else:  # a newer report is there, and its writer may have died before going further
            self.shape(tree).learn([node])
            enqueue(pending, parent_id, Pending(level, Count(node.total, node.sv), full))

    def _report_newer(
        self,
        tree: Tree,
        parent_id: NodeId,
        level: int,
        children: dict[NodeId, Pending],
        parent: Inner,
        pending: dict[NodeId, Pending],
    ) -> None:
        """After a report of several children was refused: the parent as the refusal found
        it holds newer states of some (a split of one, another writer); those go on with
        the parent as it is, and the others are reported again together (one at a time
        when the parent shows none newer: it changed since)."""
        held = {
            child_id: report
            for child_id, report in children.items()
            if parent.children[child_id[1]].sv >= report.count.sv
        }
        if not held:
            for child_id, report in children.items():
                self._report_to(tree, parent_id, level, {child_id: report}, pending)
            return
        self.shape(tree).learn([parent])
        full = any(report.full for report in held.values())
        enqueue(pending, parent_id, Pending(level, Count(parent.total, parent.sv), full))
        rest = {child_id: report for child_id, report in children.items() if child_id not in held}
        if rest:
            self._report_to(tree, parent_id, level, rest, pending)

    # -- the path ---------------------------------------------------------------------------

    def _read(self, tree: Tree, node_id: NodeId) -> Node | None:
        return self.store.read_nodes(tree.board_id, tree.period, [node_id], consistent=True).get(node_id)

    def _path(self, tree: Tree, key: str, level: int = 0) -> list[NodeId]:
        """The ids from the root to the node of ``level`` that holds ``key``: guessed from
        the shape seen so far, else read a level at a time (strongly consistent)."""
        shape = self.shape(tree)
        guessed = shape.guess(key, level)
        if guessed is not None:
            return guessed
        path = [ROOT]
        node = self._read(tree, ROOT)
        if node is None:
            self.store.plant_root(tree.board_id, tree.period, tree.expires)
            node = self._read(tree, ROOT)
        while node is not None and holds(node, key) and node.level >= level:
            shape.learn([node])
            if node.level == level:
                return path
            if not isinstance(node, Inner) or not node.children:
                break
            path.append(child_for(node, key))
            node = self._read(tree, path[-1])
        raise ShapeChanged
