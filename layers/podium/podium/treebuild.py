"""A count tree built bottom up from its members' keys (docs/count-tree.md): for a board
whose members are loaded in bulk, or whose tree is rebuilt from the index, with no stream
record applied to it meanwhile. Every node is filled to ``BUILD_FILL`` of its limits, so
that the inserts that follow split none of them at once."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from itertools import pairwise
from typing import TypeVar

from podium import counttree
from podium.counttree import (
    BELOW_EVERY_KEY,
    NODE_FIXED_BYTES,
    Count,
    Entry,
    Inner,
    Leaf,
    Node,
    child_bytes,
    entry_bytes,
    separator,
)

BUILD_FILL = 0.75  # how full the nodes are packed: room for inserts before splits

T = TypeVar("T")


def build(entries: Mapping[str, Entry], sv: int = 1) -> list[Node]:
    """A tree over ``entries`` (member -> entry), its nodes from the leaves up: the root
    is the last one. Every node starts at state version ``sv``: a rebuild gives one above
    any its old tree had, so that a report of an old node still in flight (a count
    guarded by the old node's ``sv``) is refused by the new parent."""
    ordered = sorted(entries.items(), key=lambda item: item[1].key)
    runs = _runs(ordered, counttree.LEAF_MAX, lambda item: entry_bytes(*item))
    # each leaf from the shortest bound above the keys of the one before it
    bounds = [BELOW_EVERY_KEY] + [
        separator(before[-1][1].key, after[0][1].key) for before, after in pairwise(runs)
    ]
    level: list[Node] = []
    for index, run in enumerate(runs):
        hi = bounds[index + 1] if index + 1 < len(runs) else None
        level.append(Leaf(bounds[index], hi, sv, dict(run), {}))
    built: list[Node] = []
    while len(level) > 1:
        built += level
        groups = _runs(level, counttree.FANOUT, lambda node: child_bytes(node.lo, Count(node.total, node.sv)))
        level = [
            Inner(
                group[0].level + 1,
                group[0].lo,
                group[-1].hi,
                sv,
                {node.lo: Count(node.total, node.sv) for node in group},
            )
            for group in groups
        ]
    return [*built, replace(level[0], root=True)]


def _runs(items: Sequence[T], most: int, size: Callable[[T], int]) -> list[list[T]]:
    """``items`` in runs of ``BUILD_FILL`` of ``most`` and of the node size limit (one
    empty run for no items)."""
    fill = max(1, int(most * BUILD_FILL))
    room = NODE_FIXED_BYTES + int((counttree.NODE_BYTES - NODE_FIXED_BYTES) * BUILD_FILL)
    runs: list[list[T]] = [[]]
    used = NODE_FIXED_BYTES
    for item in items:
        if runs[-1] and (len(runs[-1]) >= fill or used + size(item) > room):
            runs.append([])
            used = NODE_FIXED_BYTES
        runs[-1].append(item)
        used += size(item)
    return runs
