"""The count tree's store protocol (``podium.ports.TreeStore``) over a dict: each request
atomic and conditional as the protocol says, written from its docstrings and not from the
DynamoDB code, so that the keeper can be tested on it request by request, and the DynamoDB
store compared with it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace

from podium import counttree
from podium.counttree import ROOT, Count, Inner, InOrder, Leaf, LeafWrite, Node, NodeId, Put, holds, ident


class MemoryTree:
    """The ``TreeStore`` protocol over a dict, each request atomic and conditional as the
    protocol says; ``gate`` is called before each (a test that interleaves requests waits
    there), and
    ``log`` records each (what, node, whether it was applied)."""

    def __init__(self, gate: Callable[[], None] = lambda: None) -> None:
        self.items: dict[tuple[str, str, NodeId], Node] = {}
        self.gate = gate
        self.log: list[tuple[str, NodeId, bool]] = []

    def nodes(self, board_id: str = "board", period: str = "all") -> dict[NodeId, Node]:
        return {i[2]: n for i, n in self.items.items() if i[:2] == (board_id, period)}

    def read_nodes(
        self, board_id: str, period: str, ids: Iterable[NodeId], *, consistent: bool
    ) -> dict[NodeId, Node]:
        self.gate()
        found = {i: self.items[(board_id, period, i)] for i in ids if (board_id, period, i) in self.items}
        self.log += [("read", i, True) for i in found]
        return found

    def plant_root(self, board_id: str, period: str, expires: int | None) -> None:
        self.gate()
        self.items.setdefault((board_id, period, ROOT), Leaf("", None, 0, root=True))

    def write_leaf(self, board_id: str, period: str, write: LeafWrite) -> tuple[bool, Node | None]:
        return self.write_leaf_jointly(board_id, period, [write])

    def write_leaf_jointly(
        self, board_id: str, period: str, writes: Sequence[LeafWrite]
    ) -> tuple[bool, Node | None]:
        self.gate()
        leaf_id = writes[0].leaf
        node = self.items.get((board_id, period, leaf_id))
        admitted = isinstance(node, Leaf) and all(admits(node, write) for write in writes)
        self.log.append(("leaf", leaf_id, admitted))
        if not isinstance(node, Leaf) or not admitted:
            return False, node
        entries, stones = dict(node.entries), dict(node.tombstones)
        for write in writes:
            for found, value in ((entries, write.entry), (stones, write.tombstone)):
                found.pop(write.member, None)
                if value is not None:
                    found[write.member] = value  # type: ignore[assignment]
            for member in write.drop:
                stones.pop(member, None)
        after = replace(node, sv=node.sv + 1, entries=entries, tombstones=stones)
        self.items[(board_id, period, leaf_id)] = after
        return True, after

    def report(
        self, board_id: str, period: str, parent: NodeId, level: int, counts: Mapping[str, Count]
    ) -> tuple[bool, Node | None]:
        self.gate()
        node = self.items.get((board_id, period, parent))
        admitted = (
            isinstance(node, Inner)
            and node.level == level
            and all(lo in node.children and node.children[lo].sv < c.sv for lo, c in counts.items())
        )
        self.log.append(("report", parent, admitted))
        if not isinstance(node, Inner) or not admitted:
            return False, node
        children = {**node.children, **counts}
        self.items[(board_id, period, parent)] = replace(node, sv=node.sv + 1, children=children)
        return True, node

    def replace(self, board_id: str, period: str, puts: Sequence[Put], expires: int | None) -> bool:
        self.gate()
        current = [self.items.get((board_id, period, ident(put.node))) for put in puts]
        admitted = all(
            (node is None) if put.was is None else (node is not None and node.sv == put.was)
            for put, node in zip(puts, current, strict=True)
        )
        self.log.append(("split", ident(puts[0].node), admitted))
        if admitted:
            self.items.update({(board_id, period, ident(put.node)): put.node for put in puts})
        return admitted

    def put_nodes(self, board_id: str, period: str, nodes: Sequence[Node], expires: int | None) -> None:
        self.items.update({(board_id, period, ident(node)): node for node in nodes})

    def all_nodes(self, board_id: str, period: str) -> list[Node]:
        return list(self.nodes(board_id, period).values())

    def drop(self, board_id: str, period: str) -> int:
        mine = [key for key in self.items if key[:2] == (board_id, period)]
        for key in mine:
            del self.items[key]
        return len(mine)


def admits(leaf: Leaf, write: LeafWrite) -> bool:
    if isinstance(write.expect, int):
        return leaf.sv == write.expect
    expect: InOrder = write.expect
    if expect.was is None:
        as_expected = write.member not in leaf.entries and write.member not in leaf.tombstones
    else:
        as_expected = leaf.entries.get(write.member) == expect.was
    return as_expected and (expect.key is None or holds(leaf, expect.key))


@contextmanager
def small_nodes(leaf_max: int = 3, fanout: int = 3) -> Iterator[None]:
    """Nodes of a few parts, so that a few dozen members split leaves and inner nodes and
    grow the root several levels."""
    saved = counttree.LEAF_MAX, counttree.FANOUT
    counttree.LEAF_MAX, counttree.FANOUT = leaf_max, fanout
    try:
        yield
    finally:
        counttree.LEAF_MAX, counttree.FANOUT = saved


def assert_counts_converged(nodes: list[Node]) -> None:
    """Every inner node records each child's count as the child holds it (the reports have
    all arrived)."""
    by_id = {ident(node): node for node in nodes}
    for node in nodes:
        if isinstance(node, Inner):
            for lo, recorded in node.children.items():
                assert recorded.n == by_id[(node.level - 1, lo)].total, (node, lo)
