"""The count tree's paths and reports, as its keeper walks them (``podium.treekeeper``):
which nodes lead from the root to a key (guessed from the shape seen so far, else read),
and the reports of a batch's nodes to their parents, a level at a time, those for one
parent in one request, each over an older ``sv`` only (docs/count-tree.md)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Protocol, TypeVar

from podium.counttree import ROOT, Count, Inner, Node, NodeId, child_for, holds
from podium.errors import Contended
from podium.ports import TreeStore
from podium.treepaths import Shape
from podium.values import frozen

MAX_ATTEMPTS = 16  # starts of one record over, after the shape changed under it
SHAPES_CACHED = 64  # boards and periods whose shape a keeper remembers

T = TypeVar("T")
R = TypeVar("R")


class Gather(Protocol):
    """How a batch's independent steps run: ``fanout.gather_writes``, or ``in_turn``."""

    def __call__(self, function: Callable[[T], R], items: Sequence[T]) -> list[R]: ...


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


class TreeWalker:
    """What the keeper's steps share: the store, how a batch's steps run, the shapes seen,
    the path to a key, and the reports up the tree."""

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
        raise Contended(f"the count tree of {tree.board_id} keeps changing shape: retrying the batch")

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
