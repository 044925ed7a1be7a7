"""The rank structures the stream keeps beside the index (``podium.head``,
``podium.buckets``): the head item of each board and period, and the score buckets with
their state and snapshot items."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from podium.dal import codecs, schema
from podium.dal.client import BucketMoved, Tables
from podium.models import Bucket, BucketState, BucketStep, FinishedSplit, HeadItem


class RankStructures:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    # -- the head -----------------------------------------------------------------------

    def get_head(self, board_id: str, period: str, *, consistent: bool = False) -> HeadItem | None:
        item = self.tables.get(schema.head_key(board_id, period), consistent=consistent)
        return codecs.head_from_item(item) if item else None

    def put_head(self, board_id: str, period: str, head: HeadItem, expires: int | None) -> bool:
        """Write the head if it is still the version read (``head.version``; 0: absent);
        False when another writer got there first."""
        item = codecs.head_item(board_id, period, head, expires)
        if head.version:
            return self.tables.put(
                item, ConditionExpression="v = :v", ExpressionAttributeValues={":v": {"N": str(head.version)}}
            )
        return self.tables.put_if_absent(item)

    # -- the buckets --------------------------------------------------------------------

    def list_buckets(
        self, board_id: str, period: str, *, upto: str | None = None, consistent: bool = False
    ) -> list[Bucket]:
        """The board's buckets in key order, from the first up to the one holding ``upto``
        (None: all of them)."""
        prefix = schema.bucket_prefix(period)
        values: dict[str, Any] = {":pk": {"S": f"{schema.BOARD}{board_id}"}, ":lo": {"S": prefix}}
        if upto is None:
            condition = "pk = :pk AND begins_with(sk, :lo)"
        else:
            condition = "pk = :pk AND sk BETWEEN :lo AND :hi"
            values[":hi"] = {"S": prefix + upto}
        request = {
            "KeyConditionExpression": condition,
            "ExpressionAttributeValues": values,
            "ConsistentRead": consistent,
        }
        return [codecs.bucket_from_item(item, len(prefix)) for item in self.tables.query_items(request)]

    def create_first_bucket(self, board_id: str, period: str, bucket: Bucket, expires: int | None) -> None:
        """The bucket below every key, counted by the stream from empty (a no-op when it
        exists)."""
        self.tables.put_if_absent(codecs.bucket_item(board_id, period, bucket, expires))

    def bucket_state(self, board_id: str, period: str, lo: str) -> BucketState:
        """What a bucket records per member (its moved map, and its parts while it splits),
        read consistently."""
        item = self.tables.get(schema.bucket_state_key(board_id, period, lo), consistent=True)
        if item is None:
            return BucketState({}, {}, 0)
        return BucketState(
            moved={m: int(v["N"]) for m, v in item.get("mv", {}).get("M", {}).items()},
            parts={m: int(v["N"]) for m, v in item.get("pm", {}).get("M", {}).items()},
            version=int(item["sv"]["N"]),
        )

    def bucket_snapshot(self, board_id: str, period: str, lo: str, epoch: int) -> frozenset[str]:
        """The member hashes that a bucket's last scan showed in it."""
        item = self.tables.get(schema.bucket_snapshot_key(board_id, period, lo, epoch), consistent=True)
        if item is None:
            raise RuntimeError(f"the snapshot of bucket {lo!r} ({epoch}) of {board_id} is missing")
        return codecs.unpack_hashes(bytes(item["m"]["B"]))

    def apply_bucket_steps(
        self, mark: str, board_id: str, period: str, member: str, steps: Sequence[BucketStep]
    ) -> bool:
        """Apply one stream record's steps to the buckets, once (``mark``): False when the
        record was applied before; BucketMoved when a bucket's epoch, or the member's entry
        in a moved map, is not what the steps were decided on (read them again)."""
        actions: list[Any] = [self.tables.mark_put(mark)]
        for step in steps:
            key = schema.bucket_key(board_id, period, step.bucket.lo)
            epoch = {":e": {"N": str(step.bucket.epoch)}}
            if step.delta:
                values = {**epoch, ":d": {"N": str(step.delta)}}
                update = {"Key": key, "UpdateExpression": "ADD n :d", "ConditionExpression": "e = :e"}
                actions.append({"Update": {**update, "ExpressionAttributeValues": values}})
            else:
                check = {"Key": key, "ConditionExpression": "e = :e", "ExpressionAttributeValues": epoch}
                actions.append({"ConditionCheck": check})
            if step.moved is not None or step.part is not None:
                actions.append({"Update": _state_update(board_id, period, member, step)})
        codes = self.tables.transact(actions)
        if codes is None:
            return True
        if codes[0] == "ConditionalCheckFailed":
            return False
        if "ConditionalCheckFailed" in codes:
            raise BucketMoved(board_id, period)
        raise RuntimeError(f"the buckets were not changed: {codes}")

    def start_split(
        self,
        board_id: str,
        period: str,
        bucket: Bucket,
        cuts: Sequence[str],
        now_us: int,
        expires: int | None,
    ) -> bool:
        """Mark ``bucket`` as splitting at ``cuts`` since ``now_us`` (a new epoch, and empty
        parts), if it is unchanged since read; False otherwise."""
        mark_split = {
            "Key": schema.bucket_key(board_id, period, bucket.lo),
            "UpdateExpression": "SET ps = :ps, pt = :pt, e = :next",
            "ConditionExpression": "e = :e AND attribute_not_exists(ps)",
            "ExpressionAttributeValues": {
                ":ps": {"L": [{"S": cut} for cut in cuts]},
                ":pt": {"N": str(now_us)},
                ":e": {"N": str(bucket.epoch)},
                ":next": {"N": str(bucket.epoch + 1)},
            },
        }
        empty_parts = {
            "Key": schema.bucket_state_key(board_id, period, bucket.lo),
            "UpdateExpression": "SET pm = :empty, #ttl = :ttl ADD sv :one",
            "ExpressionAttributeNames": {"#ttl": "ttl"},
            "ExpressionAttributeValues": {
                ":empty": {"M": {}},
                ":one": {"N": "1"},
                ":ttl": {"N": str(expires or 0)},
            },
        }
        codes = self.tables.transact([{"Update": mark_split}, {"Update": empty_parts}])
        if codes is not None and "ConditionalCheckFailed" not in codes:
            raise RuntimeError(f"the split did not start: {codes}")
        return codes is None

    def finish_split(self, board_id: str, period: str, split: FinishedSplit, expires: int | None) -> bool:
        """Write the parts of a split (and the members its scan showed in each) in place of
        the splitting bucket, if neither the bucket nor what it records changed since read;
        False otherwise."""
        ttl = {"ttl": {"N": str(expires)}} if expires is not None else {}
        for piece, members in zip(split.pieces, split.scanned, strict=True):
            key = schema.bucket_snapshot_key(board_id, period, piece.lo, piece.snapshot_epoch)
            self.tables.put({**key, "m": {"B": codecs.pack_hashes(members)}, **ttl})
        actions: list[Any] = []
        for index, (piece, moved) in enumerate(zip(split.pieces, split.moved, strict=True)):
            bucket: dict[str, Any] = {"Item": codecs.bucket_item(board_id, period, piece, expires)}
            state: dict[str, Any] = {
                "Item": {
                    **schema.bucket_state_key(board_id, period, piece.lo),
                    "mv": {"M": {m: {"N": str(v)} for m, v in moved.items()}},
                    "sv": {"N": "1"},
                    **ttl,
                },
            }
            if index == 0:
                bucket["ConditionExpression"] = "e = :e"
                bucket["ExpressionAttributeValues"] = {":e": {"N": str(split.old.epoch)}}
                state["ConditionExpression"] = "sv = :sv"
                state["ExpressionAttributeValues"] = {":sv": {"N": str(split.state_version)}}
            else:
                bucket["ConditionExpression"] = "attribute_not_exists(pk)"
            actions += [{"Put": bucket}, {"Put": state}]
        codes = self.tables.transact(actions)
        if codes is not None and "ConditionalCheckFailed" not in codes:
            raise RuntimeError(f"the split did not finish: {codes}")
        return codes is None

    def replace_buckets(
        self, board_id: str, period: str, buckets: Sequence[Bucket], expires: int | None
    ) -> None:
        """Rebuild: drop the period's buckets and write ``buckets`` (maintenance, not for a
        board whose stream is busy)."""
        existing = self.list_buckets(board_id, period, consistent=True)
        wanted = {b.lo for b in buckets}
        deletes = [
            {"DeleteRequest": {"Key": schema.bucket_key(board_id, period, b.lo)}}
            for b in existing
            if b.lo not in wanted
        ]
        puts = [{"PutRequest": {"Item": codecs.bucket_item(board_id, period, b, expires)}} for b in buckets]
        self.tables.batch_write(deletes + puts)


def _state_update(board_id: str, period: str, member: str, step: BucketStep) -> dict[str, Any]:
    """A step's change of the bucket's state item: the member's moved entry (on the
    condition that it is what the step was decided on) and its part while splitting."""
    sets, conditions = [], []
    values: dict[str, Any] = {":one": {"N": "1"}}
    if step.moved is not None:
        sets.append("mv.#m = :mv")
        values[":mv"] = {"N": str(step.moved)}
        if not step.moved_checked:
            conditions.append("attribute_exists(mv)")
        elif step.moved_was is None:
            conditions.append("attribute_not_exists(mv.#m)")
        else:
            conditions.append("mv.#m = :was")
            values[":was"] = {"N": str(step.moved_was)}
    if step.part is not None:
        sets.append("pm.#m = :pm")
        values[":pm"] = {"N": str(step.part)}
        conditions.append("attribute_exists(pm)")
    return {
        "Key": schema.bucket_state_key(board_id, period, step.bucket.lo),
        "UpdateExpression": f"SET {', '.join(sets)} ADD sv :one",
        "ConditionExpression": " AND ".join(conditions),
        "ExpressionAttributeNames": {"#m": member},
        "ExpressionAttributeValues": values,
    }
