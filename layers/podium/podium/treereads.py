"""Counting from the count tree (docs/count-tree.md, "Reads"): how many members sort below
each of some keys, from the nodes on the paths from the root to the keys' leaves.

The paths are guessed from the shape this process has seen (the inner nodes' children's
bounds change only when a node splits), and their nodes read in one round: a
BatchGetItem of their union (100 keys a request, the requests at once), a height's worth
of items for one key, the shared upper levels once for many. Every path is checked
(``treepaths.walk``: each node holds the key, and is the child its parent names for it).
Where the shape is not known that far, the rest of the path is read a level at a time,
and the shape learns it; a path whose nodes disagree (read at different moments, across
a split) is read again from the root, strongly consistent.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from podium import retry
from podium.counttree import BELOW_EVERY_KEY, ROOT, Leaf, Node, NodeId, node_bytes
from podium.errors import Contended
from podium.ports import TreeStore
from podium.recent import Recent
from podium.treepaths import Shape, count_below, walk
from podium.values import frozen

MAX_ROUNDS = 8  # reads again of paths that keep changing under the read
SHAPES_CACHED = 64
EMPTY = Leaf(BELOW_EVERY_KEY, None, 0, root=True)  # the tree of a board nobody has joined


@frozen
class TreeCount:
    """The members below each bound, and the node items the count asked for: each one's
    size (about: ``counttree.node_bytes``; 0 when not found, which is billed the least a
    read is) and whether it was read strongly consistent (``podium.cost`` bills them)."""

    counts: list[int]
    reads: tuple[tuple[int, bool], ...]


class _Asked:
    """The node items one count asks the store for, as ``TreeCount.reads`` has them."""

    def __init__(self) -> None:
        self.reads: list[tuple[int, bool]] = []

    def add(self, ids: Iterable[NodeId], found: Mapping[NodeId, Node], *, consistent: bool) -> None:
        self.reads += [(node_bytes(found[i]) if i in found else 0, consistent) for i in ids]


class TreeReader:
    def __init__(self, store: TreeStore, *, root_seconds: float = 0) -> None:
        self.store = store
        self._shapes: dict[tuple[str, str], Shape] = {}
        # Every count reads the root: a hot board's would take one partition's (and one
        # item's) 3,000 RCU/s at 6,000 counts a second. Kept ``root_seconds`` (podium.recent),
        # it is a report or so behind the nodes under it, as a report on its way up is; a
        # path that disagrees with it (a split) is read again from the root, consistently.
        self._roots: Recent[tuple[str, str], Node] = Recent(root_seconds)

    def shape(self, board_id: str, period: str) -> Shape:
        key = (board_id, period)
        if key not in self._shapes and len(self._shapes) >= SHAPES_CACHED:
            self._shapes.clear()
        return self._shapes.setdefault(key, Shape())

    def count_below(
        self, board_id: str, period: str, bounds: Sequence[str], *, consistent: bool = False
    ) -> list[int]:
        """How many members sort below each bound, in the order given (``consistent``: as
        of every report the tree has taken; else a read may be a report behind)."""
        return self.count(board_id, period, bounds, consistent=consistent).counts

    def count(
        self, board_id: str, period: str, bounds: Sequence[str], *, consistent: bool = False
    ) -> TreeCount:
        """``count_below``, with what the count read (``podium.cost`` bills it)."""
        asked = _Asked()
        paths = self.paths(board_id, period, bounds, consistent=consistent, asked=asked)
        counts = [count_below(paths[bound], bound) for bound in bounds]
        return TreeCount(counts, tuple(asked.reads))

    def paths(
        self,
        board_id: str,
        period: str,
        bounds: Sequence[str],
        *,
        consistent: bool = False,
        asked: _Asked | None = None,
    ) -> dict[str, list[Node]]:
        """The checked path from the root to each bound's leaf (a tree with no root yet: an
        empty root leaf)."""
        asked = asked if asked is not None else _Asked()
        shape = self.shape(board_id, period)
        wanted = sorted(set(bounds))
        guessed = {node_id for bound in wanted for node_id in shape.guess(bound, partial=True) or [ROOT]}
        root = None if consistent else self._roots.get((board_id, period))
        if root is not None:
            guessed.discard(ROOT)
        nodes = self.store.read_nodes(board_id, period, guessed, consistent=consistent) if guessed else {}
        asked.add(guessed, nodes, consistent=consistent)
        if root is not None:
            nodes[ROOT] = root
        found: dict[str, list[Node]] = {}
        for _ in range(MAX_ROUNDS):
            disagree = self._descend(board_id, period, nodes, wanted, found, asked, consistent=consistent)
            shape.learn(nodes.values())
            if ROOT in nodes and nodes[ROOT] is not root:
                self._roots.keep((board_id, period), nodes[ROOT])
            if not disagree:
                return found
            # read at different moments, across a split: read again from the root, consistently
            nodes, wanted, consistent = {}, disagree, True
        after = retry.RETRY_AFTER_SECONDS
        raise Contended(f"the count tree of {board_id} kept changing under a read; retry in {after} s", after)

    def _descend(
        self,
        board_id: str,
        period: str,
        nodes: dict[NodeId, Node],
        bounds: list[str],
        found: dict[str, list[Node]],
        asked: _Asked,
        *,
        consistent: bool,
    ) -> list[str]:
        """Walk each bound down through ``nodes``, reading the nodes the walks need next, a
        level at a time, until every walk is complete (in ``found``) or meets nodes that
        disagree (those bounds are returned)."""
        pending, disagree = bounds, []
        while pending:
            needed: dict[NodeId, list[str]] = {}
            for bound in pending:
                step = walk(nodes, bound)
                if step.complete:
                    found[bound] = step.path
                elif step.needs is None:
                    disagree.append(bound)
                else:
                    needed.setdefault(step.needs, []).append(bound)
            read = self.store.read_nodes(board_id, period, needed, consistent=consistent) if needed else {}
            asked.add(needed, read, consistent=consistent)
            pending = []
            for node_id, waiting in needed.items():
                if node_id in read:
                    pending += waiting
                elif node_id == ROOT and consistent:  # no tree yet: nobody below any bound
                    found.update((bound, [EMPTY]) for bound in waiting)
                else:
                    disagree += waiting
            nodes.update(read)
        return disagree
