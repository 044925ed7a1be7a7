"""Paths through the count tree (``podium.counttree``), from the root to the node that holds
a key: following them through nodes read, checking every step (``walk``); counting the
members below a key from one (``count_below``); and guessing them from the inner nodes a
process has seen, without reading down to them (``Shape``). The keeper
(``podium.treekeeper``) and the reader (``podium.treereads``) share them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise

from podium.counttree import ROOT, Inner, Leaf, Node, NodeId, child_for, holds, ident
from podium.values import frozen


@frozen
class Walk:
    """The path from the root towards a key as far as some nodes read go: ``complete`` when
    it reaches the level asked; else ``needs`` names the node to read next (None: the nodes
    disagree, read at different moments or across a change of shape)."""

    path: list[Node]
    needs: NodeId | None
    complete: bool


def walk(nodes: Mapping[NodeId, Node], key: str, level: int = 0) -> Walk:
    """Follow ``key`` down from the root through ``nodes``, checking every step: each node
    holds the key, and is at the level below its parent."""
    path: list[Node] = []
    at, expected = ROOT, None
    while True:
        node = nodes.get(at)
        if node is None:
            return Walk(path, at, complete=False)
        if not holds(node, key) or node.level < level or expected not in (None, node.level):
            return Walk(path, None, complete=False)
        path.append(node)
        if node.level == level:
            return Walk(path, None, complete=True)
        if not isinstance(node, Inner) or not node.children:
            return Walk(path, None, complete=False)
        at, expected = child_for(node, key), node.level - 1


def count_below(path: Sequence[Node], bound: str) -> int:
    """The members whose keys sort below ``bound``, from a complete walk to it: the counts
    of the children before the path's child at every inner node, and the leaf's keys below
    the bound."""
    counted = 0
    for node, child in pairwise(path):
        if isinstance(node, Inner):
            counted += sum(count.n for lo, count in node.children.items() if lo < child.lo)
    leaf = path[-1]
    if not isinstance(leaf, Leaf):
        raise ValueError("a count is read down to a leaf")
    return counted + sum(1 for entry in leaf.entries.values() if entry.key < bound)


class Shape:
    """The inner nodes (and the root) a process has seen, to guess the path to a key
    without reading down to it. A guess is only a guess: a write along it checks its
    conditions, a read checks the nodes it reads (``walk``)."""

    MOST = 8192  # nodes kept (cleared when full): the paths a process reads most come back

    def __init__(self) -> None:
        self.nodes: dict[NodeId, Node] = {}

    def learn(self, nodes: Iterable[Node]) -> None:
        for node in nodes:
            if isinstance(node, Inner) or node.root:
                if len(self.nodes) >= self.MOST:
                    self.nodes.clear()
                self.nodes[ident(node)] = node

    def forget(self, keys: Iterable[str] | None = None) -> None:
        """Forget the nodes on the paths to ``keys`` (one of them was wrong), or all."""
        for key in keys if keys is not None else []:
            for node_id in self.guess(key, partial=True) or []:
                self.nodes.pop(node_id, None)
        if keys is None:
            self.nodes.clear()

    def guess(self, key: str, level: int = 0, *, partial: bool = False) -> list[NodeId] | None:
        """The ids on the path from the root to the node of ``level`` holding ``key``, as
        far as known: None when not known that far, or (``partial``) as far as known and
        the first node not seen."""
        path = [ROOT]
        node = self.nodes.get(ROOT)
        while node is not None and node.level >= level:
            if node.level == level:
                return path
            if not isinstance(node, Inner) or not node.children:
                break
            path.append(child_for(node, key))
            if path[-1][0] == level:
                return path
            node = self.nodes.get(path[-1])
        return path if partial else None
