"""The rank structures beside the index: the head item of each board and period, which the
stream keeps (``podium.head``), and the removal of the score buckets that stacks from
before the count tree (``podium.dal.tree``) still hold."""

from __future__ import annotations

from podium.dal import codecs, schema
from podium.dal.client import Tables
from podium.models import HeadItem


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

    def drop_buckets(self, board_id: str, period: str) -> int:
        """Delete the period's bucket, state and snapshot items (a board's tree was built:
        the stream keeps no buckets any more, and stale ones must count nothing); how many
        there were."""
        keys = []
        for prefix in (schema.BUCKET, schema.BUCKET_STATE, schema.BUCKET_SNAPSHOT):
            request = {
                "KeyConditionExpression": "pk = :pk AND begins_with(sk, :prefix)",
                "ExpressionAttributeValues": {
                    ":pk": {"S": f"{schema.BOARD}{board_id}"},
                    ":prefix": {"S": f"{prefix}{period}{schema.SEPARATOR}"},
                },
                "ProjectionExpression": "pk, sk",
            }
            keys += [
                schema.key(item["pk"]["S"], item["sk"]["S"]) for item in self.tables.query_items(request)
            ]
        self.tables.batch_write([{"DeleteRequest": {"Key": key}} for key in keys])
        return len(keys)
