"""The count tree's items (``podium.counttree``; docs/count-tree.md): a node per item, the
root at ``T#{boardId}#{period}`` / ``R`` and every other node at ``{level:02d}#{lo}``, with
the period's TTL on a time-windowed board.

The nodes other than the root lie under ``T#{boardId}#{period}#{n}``, ``n`` a hash of their
sort key (``schema.TREE_SPREAD`` keys), so that a hot board's rank reads are not all one
partition key's.

Member ids and sort keys go into the maps' keys through ``ExpressionAttributeNames`` (they
are printable ASCII); an inner node's children are keyed ``k`` + their lower end, because
a map key cannot be empty and the first node of a level starts at "". Each method is one
request: the keeper (``podium.treekeeper``) interleaves them with other writers' and
decides between them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from podium.counttree import (
    ROOT,
    Count,
    Inner,
    InOrder,
    Leaf,
    LeafWrite,
    Node,
    NodeId,
    Put,
    child_of,
    child_text,
    entry_of,
    entry_text,
    ordered,
    tombstone_of,
    tombstone_text,
)
from podium.dal import schema
from podium.dal.client import Item, Tables
from podium.errors import WriteRejected

# What a split's transaction may be refused for, other than a mistake: a condition failed
# (a writer came first), or another transaction held one of its items.
SPLIT_REFUSED = {"None", "ConditionalCheckFailed", "TransactionConflict"}


class CountTree:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    @staticmethod
    def key(board_id: str, period: str, node_id: NodeId) -> Item:
        level, lo = node_id
        return schema.tree_key(board_id, period, None if node_id == ROOT else level, lo)

    def read_nodes(
        self, board_id: str, period: str, ids: Iterable[NodeId], *, consistent: bool
    ) -> dict[NodeId, Node]:
        """The nodes found among ``ids``, in one BatchGetItem per 100 keys, sent at once
        (across the tree's partition keys)."""
        keys: dict[tuple[str, str], NodeId] = {}
        for node_id in ids:
            key = self.key(board_id, period, node_id)
            keys[(key["pk"]["S"], key["sk"]["S"])] = node_id
        found = self.tables.batch_get([schema.key(pk, sk) for pk, sk in keys], consistent=consistent)
        return {keys[found_key]: tree_node_from_item(item) for found_key, item in found.items()}

    def plant_root(self, board_id: str, period: str, expires: int | None) -> None:
        """An empty root leaf, unless the tree has a root."""
        root = Leaf("", None, 0, root=True)
        self.tables.put_if_absent(tree_item(board_id, period, root, expires))

    def write_leaf(self, board_id: str, period: str, write: LeafWrite) -> tuple[bool, Node | None]:
        """One leaf write (``counttree.LeafWrite``), answered with the leaf after it, or with
        the node as its condition found it."""
        return self.write_leaf_jointly(board_id, period, [write])

    def write_leaf_jointly(
        self, board_id: str, period: str, writes: Sequence[LeafWrite]
    ) -> tuple[bool, Node | None]:
        """Writes of different members to one leaf in one UpdateItem, on all their
        conditions at once: all of them, or none (answered as ``write_leaf``)."""
        names = {"#e": "e", "#x": "x", "#sv": "sv"}
        values: dict[str, Any] = {":one": {"N": "1"}}
        sets, removes, conditions = [], [], []
        for at, write in enumerate(writes):
            member = f"#m{at}"
            names[member] = write.member
            if write.entry is not None:
                sets.append(f"#e.{member} = :entry{at}")
                values[f":entry{at}"] = {"S": entry_text(write.member, write.entry)}
            else:
                removes.append(f"#e.{member}")
            if write.tombstone is not None:
                sets.append(f"#x.{member} = :stone{at}")
                values[f":stone{at}"] = {"S": tombstone_text(write.tombstone)}
            else:
                removes.append(f"#x.{member}")
            for index, dropped in enumerate(write.drop):
                names[f"#d{at}_{index}"] = dropped
                removes.append(f"#x.#d{at}_{index}")
            conditions.append(_leaf_condition(write.expect, at, names, values))
        expression = " ".join(
            part
            for part in (
                f"SET {', '.join(sets)}" if sets else "",
                f"REMOVE {', '.join(removes)}" if removes else "",
                "ADD #sv :one",
            )
            if part
        )
        done, item = self.tables.update_answering(
            self.key(board_id, period, writes[0].leaf),
            expression,
            ConditionExpression=" AND ".join(conditions),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
        return done, tree_node_from_item(item) if item else None

    def report(
        self, board_id: str, period: str, parent: NodeId, level: int, counts: Mapping[str, Count]
    ) -> tuple[bool, Node | None]:
        """Set the children's counts in ``parent`` (of ``level``: the root's changes), each
        over an older ``sv`` only, in one UpdateItem: answered with the parent before it, or
        as the failed condition found it."""
        names = {"#c": "c", "#sv": "sv", "#lvl": "lvl"}
        values: dict[str, Any] = {":one": {"N": "1"}, ":lvl": {"N": str(level)}}
        sets, conditions = [], ["#lvl = :lvl"]
        for index, (lo, count) in enumerate(sorted(counts.items())):
            names[f"#k{index}"] = schema.TREE_CHILD + lo
            values[f":c{index}"] = {"S": child_text(count)}
            # the child's text starts with its state version, in an order of its own: an
            # older one recorded is a text below this one's version (absent: none below)
            values[f":s{index}"] = {"S": ordered(count.sv)}
            sets.append(f"#c.#k{index} = :c{index}")
            conditions.append(f"#c.#k{index} < :s{index}")
        done, item = self.tables.update_answering(
            self.key(board_id, period, parent),
            f"SET {', '.join(sets)} ADD #sv :one",
            returning="ALL_OLD",
            ConditionExpression=" AND ".join(conditions),
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )
        return done, tree_node_from_item(item) if item else None

    def replace(self, board_id: str, period: str, puts: Sequence[Put], expires: int | None) -> bool:
        """A split: the nodes written whole in one TransactWriteItems, each on the condition
        that its item still has the ``sv`` it was read with (or does not exist yet)."""
        actions: list[Any] = []
        for put in puts:
            action: dict[str, Any] = {"Item": tree_item(board_id, period, put.node, expires)}
            if put.was is None:
                action["ConditionExpression"] = "attribute_not_exists(pk)"
            else:
                action["ConditionExpression"] = "#sv = :sv"
                action["ExpressionAttributeNames"] = {"#sv": "sv"}
                action["ExpressionAttributeValues"] = {":sv": {"N": str(put.was)}}
            actions.append({"Put": action})
        codes = self.tables.transact(actions)
        if codes is not None and not set(codes) <= SPLIT_REFUSED:
            raise WriteRejected(f"a split of the count tree of {board_id} failed", codes)
        return codes is None

    def put_nodes(self, board_id: str, period: str, nodes: Sequence[Node], expires: int | None) -> None:
        """Write the nodes whole (a build, on a tree that no one else writes meanwhile, and
        that ``drop`` emptied)."""
        self.tables.batch_write(
            [{"PutRequest": {"Item": tree_item(board_id, period, node, expires)}} for node in nodes]
        )

    def all_nodes(self, board_id: str, period: str) -> list[Node]:
        """Every node of the period's tree, read strongly consistent (a query of each of
        its partition keys: the checker, and a rebuild's count of what it replaces). Items
        under the root's key other than the root are nodes too: the checker names them."""
        return [tree_node_from_item(item) for item in self._items(board_id, period, keys_only=False)]

    def drop(self, board_id: str, period: str) -> int:
        """Delete every node of the period's tree (a rebuild first: a build does not write
        every node of an older shape); how many there were. The queries read keys only."""
        items = self._items(board_id, period, keys_only=True)
        keys = [schema.key(item["pk"]["S"], item["sk"]["S"]) for item in items]
        self.tables.batch_write([{"DeleteRequest": {"Key": key}} for key in keys])
        return len(keys)

    def _items(self, board_id: str, period: str, *, keys_only: bool) -> list[Item]:
        """The items under the root's partition key and under each of the spread ones: a
        bounded fan-out of ``TREE_SPREAD`` + 1 queries, strongly consistent."""
        items: list[Item] = []
        for pk in schema.tree_pks(board_id, period):
            items += self.tables.query_items(_partition(pk, keys_only))
        return items


def _partition(pk: str, keys_only: bool) -> dict[str, Any]:
    request: dict[str, Any] = {
        "KeyConditionExpression": "pk = :pk",
        "ExpressionAttributeValues": {":pk": {"S": pk}},
        "ConsistentRead": True,
    }
    if keys_only:
        request["ProjectionExpression"] = "pk, sk"
    return request


def _leaf_condition(expect: InOrder | int, at: int, names: dict[str, str], values: dict[str, Any]) -> str:
    """The condition of the ``at``-th write to a leaf (its member is ``#m<at>``): the ``sv``
    it was decided on; or what the usual order leaves, with the key it puts within the
    leaf's range (an entry is always within it)."""
    if isinstance(expect, int):
        values[f":sv{at}"] = {"N": str(expect)}
        return f"attribute_exists(#e) AND #sv = :sv{at}"
    member = f"#m{at}"
    if expect.was is None:
        parts = ["attribute_exists(#e)", f"attribute_not_exists(#e.{member})"]
        parts.append(f"attribute_not_exists(#x.{member})")
    else:
        values[f":was{at}"] = {"S": entry_text(names[member], expect.was)}
        parts = [f"#e.{member} = :was{at}"]
    if expect.key is not None:
        names.update({"#lo": "lo", "#hi": "hi"})
        values[f":key{at}"] = {"S": expect.key}
        parts += [f"#lo <= :key{at}", f"(attribute_not_exists(#hi) OR :key{at} < #hi)"]
    return " AND ".join(parts)


# -- the items' codecs ------------------------------------------------------------------


def tree_item(board_id: str, period: str, node: Node, expires: int | None) -> Item:
    """A node's item: ``lvl``, ``lo``, ``hi`` (absent: to the end), ``sv``, and a leaf's
    entries ``e`` and tombstones ``x`` by member id, or an inner node's children ``c`` by
    ``k`` + lower end."""
    item: Item = {
        **schema.tree_key(board_id, period, None if node.root else node.level, node.lo),
        "lvl": {"N": str(node.level)},
        "lo": {"S": node.lo},
        "sv": {"N": str(node.sv)},
    }
    if node.hi is not None:
        item["hi"] = {"S": node.hi}
    if isinstance(node, Leaf):
        item["e"] = {"M": {m: {"S": entry_text(m, e)} for m, e in node.entries.items()}}
        item["x"] = {"M": {m: {"S": tombstone_text(t)} for m, t in node.tombstones.items()}}
    else:
        item["c"] = {"M": {schema.TREE_CHILD + lo: {"S": child_text(c)} for lo, c in node.children.items()}}
    if expires is not None:
        item["ttl"] = {"N": str(expires)}
    return item


def tree_node_from_item(item: Item) -> Node:
    lo, hi, sv = item["lo"]["S"], item["hi"]["S"] if "hi" in item else None, int(item["sv"]["N"])
    root = item["sk"]["S"] == schema.TREE_ROOT
    if "e" in item:
        entries = {m: entry_of(m, e["S"]) for m, e in item["e"]["M"].items()}
        stones = {m: tombstone_of(t["S"]) for m, t in item.get("x", {}).get("M", {}).items()}
        return Leaf(lo, hi, sv, entries, stones, root)
    children = {name[len(schema.TREE_CHILD) :]: child_of(c["S"]) for name, c in item["c"]["M"].items()}
    return Inner(int(item["lvl"]["N"]), lo, hi, sv, children, root)
