"""What the consistency checker (``podium.consistency``) reads of a board, raw, and the few
writes of its repairs that no other repository makes.

Raw means: counts as stored (a ``memberCount`` driven below zero by a lost record reads as
that negative number, where the API's reads show 0), and every member item of the board,
hidden, tombstoned or orphaned, with the index keys it carries. Only a Scan finds them
all: a hidden member is in no index, and nothing lists a board's members. So a check
reads the whole table once (in parallel segments, each followed past the 1 MB page
limit), and is an operator's tool, not a request path."""

from __future__ import annotations

from typing import Any

from podium import fanout
from podium.dal import codecs, schema
from podium.dal.client import Item, Tables, translate_throttling
from podium.models import ScoreState
from podium.values import frozen

SCAN_SEGMENTS = 4
# What a check needs of a profile or a score item: never the member's data (up to 64 KiB).
SCAN_ATTRIBUTES = {
    "#pk": "pk",
    "#sk": "sk",
    "#s": "s",
    "#v": "v",
    "#ci": "ci",  # with v, the version a rebuilt count tree's entry carries
    "#t": "t",
    "#h": "h",
    "#hd": "hd",
    "#ht": "ht",
    "#rt": "rt",  # a repair writes the item again: with what it remembers of its rollups
    "#rpk": "rpk",
    "#rpkB": "rpkB",
    "#rsk": "rsk",
    "#hidden": "hidden",
    "#gone": schema.TOMBSTONE,
}


@frozen
class StoredProfile:
    member_id: str
    hidden: bool
    gone_us: int | None  # the tombstone of a delete that has not finished


@frozen
class StoredScore:
    """A member's score item in one period, with the index keys it carries (None: none)."""

    member_id: str
    period: str
    state: ScoreState
    partition: str | None  # in index A (``rpk``)
    sort_key: str | None
    partition_b: str | None = None  # in index B (``rpkB``)

    def partition_in(self, index: str) -> str | None:
        """Its partition key in one ranking index."""
        return self.partition if index == "A" else self.partition_b


@frozen
class BoardItems:
    profiles: dict[str, StoredProfile]
    scores: list[StoredScore]


@frozen
class IndexEntry:
    """One entry of the ranking index: the item it comes from, and its keys."""

    pk: str
    sk: str
    partition: str
    sort_key: str


class Audit:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    def board_items(self, board_id: str) -> BoardItems:
        """Every profile and score item of the board's members, read consistently."""
        pages = fanout.gather(
            lambda segment: self._scan_segment(board_id, segment), list(range(SCAN_SEGMENTS))
        )
        profiles: dict[str, StoredProfile] = {}
        scores: list[StoredScore] = []
        for item in (item for page in pages for item in page):
            _, member_id = schema.parse_member_pk(item["pk"]["S"])
            sk = item["sk"]["S"]
            if sk == schema.PROFILE:
                gone = item.get(schema.TOMBSTONE)
                profiles[member_id] = StoredProfile(
                    member_id,
                    bool(item.get("hidden", {}).get("BOOL", False)),
                    int(gone["N"]) if gone else None,
                )
            elif "s" in item and "v" in item and "t" in item:
                scores.append(
                    StoredScore(
                        member_id,
                        schema.period_of_score_sk(sk),
                        codecs.score_from_item(item),
                        item["rpk"]["S"] if "rpk" in item else None,
                        item["rsk"]["S"] if "rsk" in item else None,
                        item["rpkB"]["S"] if "rpkB" in item else None,
                    )
                )
        scores.sort(key=lambda s: (s.period, s.member_id))
        return BoardItems(profiles, scores)

    def _scan_segment(self, board_id: str, segment: int) -> list[Item]:
        request: dict[str, Any] = {
            "TableName": self.tables.table,
            "Segment": segment,
            "TotalSegments": SCAN_SEGMENTS,
            "ConsistentRead": True,
            "FilterExpression": "begins_with(#pk, :members) AND (#sk = :profile OR begins_with(#sk, :score))",
            "ProjectionExpression": ", ".join(SCAN_ATTRIBUTES),
            "ExpressionAttributeNames": SCAN_ATTRIBUTES,
            "ExpressionAttributeValues": {
                ":members": {"S": schema.member_pk(board_id, "")},
                ":profile": {"S": schema.PROFILE},
                ":score": {"S": schema.SCORE},
            },
        }
        items: list[Item] = []
        while True:
            with translate_throttling():
                response = self.tables.client.scan(**request)
            items.extend(response.get("Items", []))
            if "LastEvaluatedKey" not in response:
                return items
            request["ExclusiveStartKey"] = response["LastEvaluatedKey"]

    def index_entries(self, partition: str) -> list[IndexEntry]:
        """Every entry of one shard partition of a ranking index, in key order."""
        index, attribute = self.tables.index_for(partition)
        request: dict[str, Any] = {
            "IndexName": index,
            "KeyConditionExpression": f"{attribute} = :p",
            "ExpressionAttributeValues": {":p": {"S": partition}},
        }
        return [
            IndexEntry(item["pk"]["S"], item["sk"]["S"], item[attribute]["S"], item["rsk"]["S"])
            for item in self.tables.query_items(request)
        ]

    def stored_counts(self, board_id: str, period: str | None) -> tuple[int | None, int | None]:
        """The board's ``memberCount`` and (with ``period``) that period's count, as stored:
        None where there is none."""
        keys = [schema.board_key(board_id)]
        if period is not None:
            keys.append(schema.period_count_key(board_id, period))
        found = self.tables.batch_get(keys, consistent=True)

        def count(key: Item) -> int | None:
            item = found.get((key["pk"]["S"], key["sk"]["S"]))
            return int(item["memberCount"]["N"]) if item and "memberCount" in item else None

        return count(keys[0]), (count(keys[1]) if period is not None else None)

    def set_member_count(self, board_id: str, seen: int | None, value: int) -> bool:
        """Set the board's ``memberCount`` to ``value`` if it is still ``seen`` (a stream
        record applied meanwhile fails it: False)."""
        return self._set_count(schema.board_key(board_id), seen, value, board=True)

    def set_period_count(
        self, board_id: str, period: str, seen: int | None, value: int, expires: int | None
    ) -> bool:
        """Set one period's count as ``set_member_count`` sets the board's."""
        return self._set_count(schema.period_count_key(board_id, period), seen, value, expires=expires)

    def _set_count(
        self, key: Item, seen: int | None, value: int, *, board: bool = False, expires: int | None = None
    ) -> bool:
        values: dict[str, Any] = {":want": {"N": str(value)}}
        names = {"#n": "memberCount"}
        expression = "SET #n = :want"
        if seen is None:
            condition = "attribute_not_exists(#n)"
        else:
            condition = "#n = :seen"
            values[":seen"] = {"N": str(seen)}
        if board:
            condition = f"attribute_exists(pk) AND {condition}"
        if expires is not None:
            expression += ", #ttl = :ttl"
            names["#ttl"] = "ttl"
            values[":ttl"] = {"N": str(expires)}
        return self.tables.update(
            key,
            expression,
            ConditionExpression=condition,
            ExpressionAttributeNames=names,
            ExpressionAttributeValues=values,
        )

    def delete_orphan_score(self, board_id: str, member_id: str, period: str, version: int) -> bool:
        """Delete a score item that no member owns, if it is still the version read."""
        return self.tables.delete_if(
            schema.score_key(board_id, member_id, period),
            "v = :v",
            ExpressionAttributeValues={":v": {"N": str(version)}},
        )

    def drop_index_keys(self, entry: IndexEntry) -> bool:
        """Take an item that is no ranked member of the board out of the index (its keys
        removed, the rest kept), if it still carries the keys read."""
        _, attribute = self.tables.index_for(entry.partition)
        return self.tables.update(
            schema.key(entry.pk, entry.sk),
            "REMOVE rpk, rpkB, rsk",
            TableName=self.tables.table,  # what an index holds is the streamed table's, whatever its key
            ConditionExpression=f"{attribute} = :p AND rsk = :k",
            ExpressionAttributeValues={":p": {"S": entry.partition}, ":k": {"S": entry.sort_key}},
        )
