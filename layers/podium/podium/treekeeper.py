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

A batch from the stream (``apply_batch``) is written to its leaves a leaf at a time: the
members with one record in it up to ``JOINT_MOST`` in one request, each on its own
condition of the usual order (a joint write refused goes again a record at a time); its
reports are sent once for the whole batch: each node's newest state, a level at a time,
those for one parent in one request (``podium.treereports``). If they fail, every record of
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
from collections.abc import Callable, Sequence
from dataclasses import replace

from podium.counttree import (
    Change,
    Count,
    Inner,
    Leaf,
    Node,
    NodeId,
    Outcome,
    Version,
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
from podium.errors import Contended
from podium.treereports import (
    MAX_ATTEMPTS,
    Gather,
    Pending,
    ShapeChanged,
    Tree,
    TreeWalker,
    enqueue,
    in_turn,
    to_the_root,
)

__all__ = ["Gather", "Newest", "ShapeChanged", "Tree", "TreeKeeper", "in_turn"]

JOINT_MOST = 8  # lone records' writes to one leaf in one request
MAX_WRITES = 32  # writes of one leaf or splits of one node overtaken by other writers

log = logging.getLogger(__name__)

# The member's score item's version now (None: there is none), read for a replayed record.
Newest = Callable[[], Version | None]
Judge = Callable[[Leaf, Change], Outcome]


class TreeKeeper(TreeWalker):
    """The count tree kept from the stream: records written to their leaves, nodes split."""

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
        raise Contended(f"the count tree of {tree.board_id} keeps changing shape: retrying the record")

    def apply_batch(self, tree: Tree, changes: Sequence[Change]) -> set[int]:
        """Apply a batch of records from the stream, in its order, to their leaves, then
        report the batch's counts once, a node at a time: a parent takes one report for all
        the records that changed its children, not one per record. The positions of the
        records that failed (all of them when the reports fail: their redelivery meets its
        own entries and reports all the way to the root, as a record's does after a crash
        between its leaf and its reports).

        The members with one record in the batch are written a leaf at a time: up to
        ``JOINT_MOST`` of them in one request (``write_leaf_jointly``), each on its own
        condition of the usual order; a joint write that fails is written again a record
        at a time, each settling as a lone record does. A member with several records is
        written a record at a time, in the stream's order: its later records leave no
        trace of the earlier ones (a join then a leave), so a redelivery of the batch meets
        the leaves as the first delivery did, in the usual order, and its reports, net
        zero, would stop below a node the dead delivery changed but never reported. Such
        records report all the way to the root every time."""
        pending: dict[NodeId, Pending] = {}
        failed: set[int] = set()
        by_member: dict[str, list[int]] = {}
        for position, change in enumerate(changes):
            by_member.setdefault(change.member, []).append(position)
        singles = [positions[0] for positions in by_member.values() if len(positions) == 1]
        repeated = [positions for positions in by_member.values() if len(positions) > 1]

        def member_records(positions: list[int]) -> tuple[list[dict[NodeId, Pending]], list[int]]:
            """One member's records, in the stream's order (the members at once: records of
            different members meet in the tree as two consumers' do); ``full``: each
            reports all the way to the root."""
            written_all, failed_here = [], []
            for position in positions:
                change = changes[position]
                try:
                    written = self._written(tree, change)
                    written_all.append(to_the_root(written) if len(positions) > 1 else written)
                except Exception:
                    log.exception("a record of the count tree of %s failed", tree.board_id)
                    failed_here.append(position)
            return written_all, failed_here

        def collect(results: list[tuple[list[dict[NodeId, Pending]], list[int]]]) -> None:
            for written_all, failed_here in results:
                for written in written_all:
                    for report_id, report in written.items():
                        enqueue(pending, report_id, report)
                failed.update(failed_here)

        by_leaf, alone = self._by_leaf(tree, changes, singles)
        again: list[int] = []
        for written, failed_here, retry in self.gather(
            lambda parts: self._leaf_records(tree, changes, *parts), list(by_leaf.items())
        ):
            collect([([written], failed_here)])
            again += retry
        # a record whose path changed meanwhile goes again from a fresh read of it
        again = sorted(set(again + alone) - failed)
        collect(self.gather(member_records, [[position] for position in again] + repeated))
        try:
            self._report_all(tree, pending)
        except Exception:
            log.exception("the reports of a batch to the count tree of %s failed", tree.board_id)
            return set(range(len(changes)))
        return failed

    def _by_leaf(
        self, tree: Tree, changes: Sequence[Change], positions: list[int]
    ) -> tuple[dict[NodeId, list[tuple[int, list[str]]]], list[int]]:
        """The records at ``positions`` by the leaves they write, with the keys each holds
        there (the paths found at once); those whose path could not be found, apart."""

        def leaves_of(position: int) -> tuple[int, dict[NodeId, list[str]] | None]:
            leaves: dict[NodeId, list[str]] = {}
            try:
                for key in changes[position].touched():
                    leaves.setdefault(self._path(tree, key)[-1], []).append(key)
            except Exception:  # ShapeChanged, or a read that failed: the record on its own
                return position, None
            return position, leaves

        by_leaf: dict[NodeId, list[tuple[int, list[str]]]] = {}
        alone: list[int] = []
        for position, leaves in self.gather(leaves_of, positions):
            if leaves is None:
                alone.append(position)
                continue
            for leaf_id, keys in leaves.items():
                by_leaf.setdefault(leaf_id, []).append((position, keys))
        return by_leaf, alone

    def _leaf_records(
        self, tree: Tree, changes: Sequence[Change], leaf_id: NodeId, parts: list[tuple[int, list[str]]]
    ) -> tuple[dict[NodeId, Pending], list[int], list[int]]:
        """One leaf's writes of lone records, ``JOINT_MOST`` at a time, then its split or its
        report: what it leaves to report, the positions that failed, and those to write
        again from a fresh path (the leaf's keys moved)."""
        states: list[tuple[Leaf, bool, bool]] = []
        failed: list[int] = []
        retry: list[int] = []
        for start in range(0, len(parts), JOINT_MOST):
            chunk = parts[start : start + JOINT_MOST]
            if len(chunk) > 1:
                try:
                    joint = self._jointly(tree, leaf_id, [(changes[p], keys) for p, keys in chunk])
                except Exception:
                    log.exception("a joint write of the count tree of %s failed", tree.board_id)
                    failed += [position for position, _ in chunk]
                    continue
                if joint is not None:
                    states.append(joint)
                    continue
            for position, keys in chunk:
                try:
                    states.append(self._write_leaf(tree, leaf_id, keys, changes[position], replay=False))
                except ShapeChanged:
                    retry.append(position)
                except Exception:
                    log.exception("a record of the count tree of %s failed", tree.board_id)
                    failed.append(position)
        pending: dict[NodeId, Pending] = {}
        if not states:
            return pending, failed, retry
        leaf = max((state[0] for state in states), key=lambda node: node.sv)
        changed, full = any(state[1] for state in states), any(state[2] for state in states)
        written = [p for p, _ in parts if p not in failed and p not in retry]
        try:
            now = max(changes[p].now for p in written)
            self._leaf_written(tree, leaf_id, leaf, changed, full, pending, now)
        except ShapeChanged:  # the records go again, and find their entries written
            return {}, failed, retry + written
        except Exception:
            log.exception("a split of the count tree of %s failed", tree.board_id)
            return {}, failed + written, retry
        return pending, failed, retry

    def _jointly(
        self, tree: Tree, leaf_id: NodeId, records: list[tuple[Change, list[str]]]
    ) -> tuple[Leaf, bool, bool] | None:
        """Lone records' writes to one leaf in one request, each in the usual order: the
        leaf after them, whether its count changed, and False (no report to the root); None
        when any condition failed (nothing was written)."""
        writes = [
            in_order_write(leaf_id, change, change.old in keys, change.new in keys)
            for change, keys in records
        ]
        done, found = self.store.write_leaf_jointly(tree.board_id, tree.period, writes)
        if not done or not isinstance(found, Leaf):
            return None
        leaf = self._swept(tree, leaf_id, found, records[0][0])
        changed = any((change.old in keys) != (change.new in keys) for change, keys in records)
        return leaf, changed, False

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
        raise Contended(f"the count tree of {tree.board_id} keeps changing shape: retrying the record")

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
            self._leaf_written(tree, leaf_id, leaf, changed, full, pending, change.now)
        return pending

    def _leaf_written(
        self,
        tree: Tree,
        leaf_id: NodeId,
        leaf: Leaf,
        changed: bool,
        full: bool,
        pending: dict[NodeId, Pending],
        now: int,
    ) -> None:
        """After a leaf's writes: split it if it is past its size, else report it when its
        count changed (or the report must go all the way up)."""
        if overfull(leaf):
            self._split(tree, leaf_id, leaf, full, pending, now)
        elif changed or full:
            enqueue(pending, leaf_id, Pending(0, Count(leaf.total, leaf.sv), full))

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
        raise Contended(f"a leaf of the count tree of {tree.board_id} is too busy: retrying the record")

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
