"""Re-shards: a board's move to another shard count, kept on the board item (``reshard*``
attributes: the move, its progress, its checkpoint and its worker's lease) with one marker
item per board whose move is on, so that the worker finds them with one query."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from podium.dal import codecs, schema
from podium.dal.client import Tables, plain, timestamp
from podium.models import Board, Checkpoint

ON = "attribute_exists(reshardTo) AND attribute_not_exists(reshardEndedAt)"
HELD = f"{ON} AND reshardLease = :owner"


class Reshards:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    def start_reshard(
        self, board_id: str, from_shards: int, to_shards: int, started_at: datetime, settled: datetime
    ) -> bool:
        """Begin the move, and list the board among those moving; False (writing nothing)
        when the board is gone, has another shard count, or a move is on or ended after
        ``settled`` (instances may still read by its layout)."""
        update = {
            "Key": schema.board_key(board_id),
            "UpdateExpression": (
                "SET reshardFrom = :f, reshardTo = :t, reshardStartedAt = :s, reshardCopied = :zero"
                " REMOVE reshardEndedAt, reshardCheckpoint, reshardLease, reshardLeaseUntil"
            ),
            "ConditionExpression": (
                "attribute_exists(pk) AND shards = :f"
                " AND (attribute_not_exists(reshardFrom) OR reshardEndedAt < :settled)"
            ),
            "ExpressionAttributeValues": {
                ":f": {"N": str(from_shards)},
                ":t": {"N": str(to_shards)},
                ":s": {"S": timestamp(started_at)},
                ":zero": {"N": "0"},
                ":settled": {"S": timestamp(settled)},
            },
        }
        marker = {**schema.reshard_key(board_id), "startedAt": {"S": timestamp(started_at)}}
        codes = self.tables.transact([{"Update": update}, {"Put": {"Item": marker}}])
        if codes is not None and "ConditionalCheckFailed" not in codes:
            raise RuntimeError(f"the re-shard was not started: {codes}")
        return codes is None

    def moving_boards(self) -> list[str]:
        """The boards whose move is on (or just ended, its marker not removed yet)."""
        request: dict[str, Any] = {
            "TableName": self.tables.table,
            "KeyConditionExpression": "pk = :r",
            "ExpressionAttributeValues": {":r": {"S": schema.RESHARDS}},
        }
        return [
            item["sk"]["S"] for page in self.tables.query_pages(request) for item in page.get("Items", [])
        ]

    def reshard_progress(self, board_id: str) -> tuple[Board, Checkpoint | None] | None:
        """The board (consistent) and its backfill's checkpoint; None when it is gone."""
        item = self.tables.get(schema.board_key(board_id), consistent=True)
        if item is None:
            return None
        values = plain(item)
        saved = values.get("reshardCheckpoint")
        checkpoint = None
        if saved:
            fields = json.loads(saved)
            checkpoint = Checkpoint(fields["period"], int(fields["shard"]), fields.get("after"))
        return codecs.board_from_item(board_id, item), checkpoint

    def claim_reshard(self, board_id: str, owner: str, now_ms: int, until_ms: int) -> bool:
        """Take (or keep) the move's lease until ``until_ms``; False when another worker
        holds it, or the move is not on."""
        return self.tables.update(
            schema.board_key(board_id),
            "SET reshardLease = :owner, reshardLeaseUntil = :until",
            ConditionExpression=(
                f"{ON} AND (attribute_not_exists(reshardLeaseUntil) OR reshardLeaseUntil < :now"
                " OR reshardLease = :owner)"
            ),
            ExpressionAttributeValues={
                ":owner": {"S": owner},
                ":until": {"N": str(until_ms)},
                ":now": {"N": str(now_ms)},
            },
        )

    def advance_reshard(self, board_id: str, owner: str, moved: int, checkpoint: Checkpoint) -> bool:
        """Record ``moved`` more items and the new checkpoint; False when the lease is lost."""
        saved = {"period": checkpoint.period, "shard": checkpoint.shard, "after": checkpoint.after}
        return self.tables.update(
            schema.board_key(board_id),
            "SET reshardCheckpoint = :c ADD reshardCopied :n",
            ConditionExpression=HELD,
            ExpressionAttributeValues={
                ":c": {"S": json.dumps(saved)},
                ":n": {"N": str(moved)},
                ":owner": {"S": owner},
            },
        )

    def end_reshard(self, board_id: str, owner: str, to_shards: int, ended_at: datetime) -> bool:
        """The move is over: ``shards`` is the new count, in one conditional update with the
        end's time (readers keep both layouts' partitions a little longer), and the board
        leaves the moving list. False when the lease is lost."""
        update = {
            "Key": schema.board_key(board_id),
            "UpdateExpression": (
                "SET shards = :t, reshardEndedAt = :e"
                " REMOVE reshardCheckpoint, reshardLease, reshardLeaseUntil"
            ),
            "ConditionExpression": HELD,
            "ExpressionAttributeValues": {
                ":t": {"N": str(to_shards)},
                ":e": {"S": timestamp(ended_at)},
                ":owner": {"S": owner},
            },
        }
        codes = self.tables.transact([{"Update": update}, {"Delete": {"Key": schema.reshard_key(board_id)}}])
        if codes is not None and "ConditionalCheckFailed" not in codes:
            raise RuntimeError(f"the re-shard was not ended: {codes}")
        return codes is None

    def forget_reshard(self, board_id: str) -> None:
        """Remove the marker of a board that is gone or no longer moving."""
        self.tables.delete(schema.reshard_key(board_id))

    def move_index_entry(
        self,
        board_id: str,
        member_id: str,
        period: str,
        from_partition: str,
        to_partition: str,
        sort_key: str,
    ) -> bool:
        """Move one score item's index entry to another partition, if the item is still
        where and what it was read as (its ``rpk`` and ``rsk``); False when it changed
        meanwhile (its writer placed it by the layout of its time: the backfill's walk or
        the stream puts it right). A move changes no score, no version: the stream's
        consumers see an item whose ranking did not change."""
        return self.tables.update(
            schema.score_key(board_id, member_id, period),
            "SET rpk = :to",
            ConditionExpression="rpk = :from AND rsk = :rsk",
            ExpressionAttributeValues={
                ":to": {"S": to_partition},
                ":from": {"S": from_partition},
                ":rsk": {"S": sort_key},
            },
        )
