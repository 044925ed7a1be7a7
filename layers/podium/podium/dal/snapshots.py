"""The scheduled job's record of every board: ``S#{boardId}`` / ``{takenAt}`` (ISO 8601
with microseconds, UTC), so that a query read backwards lists a board's snapshots newest
first."""

from __future__ import annotations

from datetime import datetime

from podium import numbers
from podium.dal import codecs, schema
from podium.dal.client import Tables, timestamp
from podium.models import Snapshot


def snapshot_sort_key(taken_at: datetime) -> str:
    """The snapshot's sort key: its time, whose byte order is time order."""
    return timestamp(taken_at)


class Snapshots:
    def __init__(self, tables: Tables) -> None:
        self.tables = tables

    def put_snapshot(self, snapshot: Snapshot, expires_at: int) -> bool:
        """Record the snapshot; False, writing nothing, when the snapshot of that board and
        time is there already (a retried run keeps the first one)."""
        item = {
            **schema.key(schema.snapshots_pk(snapshot.board_id), snapshot_sort_key(snapshot.taken_at)),
            "id": {"S": snapshot.snapshot_id},
            "memberCount": {"N": str(snapshot.member_count)},
            "entries": {"S": numbers.dumps([entry.to_json() for entry in snapshot.entries])},
            "ttl": {"N": str(expires_at)},
        }
        return self.tables.put_if_absent(item)

    def list_snapshots(
        self,
        board_id: str,
        limit: int,
        before_sort_key: str | None,
        now_s: int,
        since_sort_key: str | None = None,
    ) -> tuple[list[Snapshot], str | None]:
        """A page of the board's snapshots, newest first, taken before ``before_sort_key``
        (None: from the newest) and not before ``since_sort_key`` (None: the oldest), and the
        sort key to continue before (None at the end). Snapshots past their TTL that
        DynamoDB has not yet removed are skipped."""
        items, next_key = self.tables.newest_first_page(
            schema.snapshots_pk(board_id), limit, before_sort_key, now_s, since=since_sort_key
        )
        return [codecs.snapshot_from_item(board_id, item) for item in items], next_key
