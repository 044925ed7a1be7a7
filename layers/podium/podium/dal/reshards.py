"""Re-shards: a board's move to another shard count, kept on the board item (``reshard*``
attributes: the move, its progress, its checkpoint and its worker's lease; ``rankIndex``,
the index it reads) with one marker item per board whose move is on, so that the worker
finds them with one query; and the score items' keys in either ranking index."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from podium.dal import codecs, schema
from podium.dal.client import Tables, plain, timestamp
from podium.errors import WriteRejected
from podium.models import Board, Checkpoint

ON = "attribute_exists(reshardTo) AND attribute_not_exists(reshardEndedAt)"
HELD = f"{ON} AND reshardLease = :owner"


class Reshards:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    def start_reshard(
        self,
        board_id: str,
        from_index: str,
        from_shards: int,
        to_shards: int,
        started_at: datetime,
        settled: datetime,
    ) -> bool:
        """Begin the move, and list the board among those moving; False (writing nothing)
        when the board is gone, has another layout, or a move is on or ended after
        ``settled`` (instances may still work by its layout)."""
        update = {
            "Key": schema.board_key(board_id),
            "UpdateExpression": (
                "SET reshardFrom = :f, reshardTo = :t, reshardStartedAt = :s, reshardCopied = :zero,"
                " reshardFromIndex = :i"
                " REMOVE reshardEndedAt, reshardSwitchedAt, reshardCheckpoint,"
                " reshardLease, reshardLeaseUntil"
            ),
            "ConditionExpression": (
                "attribute_exists(pk) AND shards = :f"
                " AND (attribute_not_exists(rankIndex) OR rankIndex = :i)"
                " AND (attribute_not_exists(reshardFrom) OR reshardEndedAt < :settled)"
            ),
            "ExpressionAttributeValues": {
                ":f": {"N": str(from_shards)},
                ":t": {"N": str(to_shards)},
                ":s": {"S": timestamp(started_at)},
                ":zero": {"N": "0"},
                ":i": {"S": from_index},
                ":settled": {"S": timestamp(settled)},
            },
        }
        marker = {**schema.reshard_key(board_id), "startedAt": {"S": timestamp(started_at)}}
        codes = self.tables.transact([{"Update": update}, {"Put": {"Item": marker}}])
        if codes is not None and "ConditionalCheckFailed" not in codes:
            raise WriteRejected("the re-shard was not started", codes)
        return codes is None

    def moving_boards(self) -> list[str]:
        """The boards whose move is on (or just ended, its marker not removed yet)."""
        request: dict[str, Any] = {
            "TableName": self.tables.table_for(schema.RESHARDS),
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

    def release_reshard(self, board_id: str, owner: str) -> bool:
        """Give the lease up (a run done with the board for now), so that the next run
        need not wait for it to run out; False when it was not held by ``owner``."""
        return self.tables.update(
            schema.board_key(board_id),
            "REMOVE reshardLease, reshardLeaseUntil",
            ConditionExpression="reshardLease = :owner",
            ExpressionAttributeValues={":owner": {"S": owner}},
        )

    def advance_reshard(self, board_id: str, owner: str, copied: int, checkpoint: Checkpoint | None) -> bool:
        """Record ``copied`` more items and the walk's new checkpoint (None: start the walk
        again from its top); False when the lease is lost."""
        saved = None
        if checkpoint is not None:
            saved = {"period": checkpoint.period, "shard": checkpoint.shard, "after": checkpoint.after}
        return self.tables.update(
            schema.board_key(board_id),
            "SET reshardCheckpoint = :c ADD reshardCopied :n",
            ConditionExpression=HELD,
            ExpressionAttributeValues={
                ":c": {"S": json.dumps(saved)} if saved else {"S": ""},
                ":n": {"N": str(copied)},
                ":owner": {"S": owner},
            },
        )

    def switch_reshard(
        self, board_id: str, owner: str, to_index: str, to_shards: int, switched_at: datetime
    ) -> bool:
        """Reads use the new index from now on: its name and shard count become the board's
        in one conditional update, and the walk starts again (the clean-up's, by whichever
        worker runs after the wait). False when the lease is lost or the move switched
        already."""
        return self.tables.update(
            schema.board_key(board_id),
            "SET shards = :t, rankIndex = :i, reshardSwitchedAt = :w"
            " REMOVE reshardCheckpoint, reshardLease, reshardLeaseUntil",
            ConditionExpression=f"{HELD} AND attribute_not_exists(reshardSwitchedAt)",
            ExpressionAttributeValues={
                ":t": {"N": str(to_shards)},
                ":i": {"S": to_index},
                ":w": {"S": timestamp(switched_at)},
                ":owner": {"S": owner},
            },
        )

    def end_reshard(self, board_id: str, owner: str, ended_at: datetime) -> bool:
        """The old index is empty: the move is over, and the board leaves the moving list.
        False when the lease is lost."""
        update = {
            "Key": schema.board_key(board_id),
            "UpdateExpression": (
                "SET reshardEndedAt = :e REMOVE reshardCheckpoint, reshardLease, reshardLeaseUntil"
            ),
            "ConditionExpression": f"{HELD} AND attribute_exists(reshardSwitchedAt)",
            "ExpressionAttributeValues": {":e": {"S": timestamp(ended_at)}, ":owner": {"S": owner}},
        }
        codes = self.tables.transact([{"Update": update}, {"Delete": {"Key": schema.reshard_key(board_id)}}])
        if codes is not None and "ConditionalCheckFailed" not in codes:
            raise WriteRejected("the re-shard was not ended", codes)
        return codes is None

    def forget_reshard(self, board_id: str) -> None:
        """Remove the marker of a board that is gone or no longer moving."""
        self.tables.delete(schema.reshard_key(board_id))

    def set_index_key(self, board_id: str, member_id: str, period: str, partition: str) -> bool:
        """Key a score item in the index ``partition`` belongs to, if it is a ranked score
        item still (never one deleted since, nor hidden: neither has ``rsk``) and not keyed
        there already (False). The key depends on the member alone, so a score write
        meanwhile changes nothing of it."""
        _, attribute = self.tables.index_for(partition)
        return self.tables.update(
            schema.score_key(board_id, member_id, period),
            f"SET {attribute} = :p",
            ConditionExpression=f"attribute_exists(rsk) AND NOT {attribute} = :p",
            ExpressionAttributeValues={":p": {"S": partition}},
        )

    def remove_index_key(self, board_id: str, member_id: str, period: str, index: str) -> bool:
        """Take a score item out of one index (the other keeps it), if it is in it."""
        attribute = schema.INDEX_KEY[index]
        return self.tables.update(
            schema.score_key(board_id, member_id, period),
            f"REMOVE {attribute}",
            ConditionExpression=f"attribute_exists({attribute})",
        )
