"""Snapshots: a scheduled job records every board's top 100 and ``memberCount``.

EventBridge invokes ``TakeSnapshotsFunction`` every ``SnapshotRateMinutes``. The job
pages through the board catalog and, for each board, reads the top 100 of its current
period with the service's own ``top`` and puts ``S#{boardId}`` / ``{takenAt}``.

* ``takenAt`` is the schedule's time (the event's ``time``), not the clock's, so a retried
  invocation of a run names the same items; the put is conditional, so it writes nothing
  new for a board that run already recorded, and only fills in the boards that failed.
* Boards are independent: one that fails is logged and the others go on; the run raises
  at the end, so Lambda retries it (asynchronous invocations are retried twice).
* Boards are read a few at a time on a pool of the job's own: ``top`` itself scatters its
  shard queries on the store's pool, which a board task must not wait on from inside.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from podium import cursors
from podium.config import settings
from podium.dal.snapshots import snapshot_sort_key
from podium.errors import NotFound
from podium.log import logger
from podium.models import Snapshot

if TYPE_CHECKING:
    from podium.wiring import Services

SNAPSHOT_SIZE = 100  # entries recorded per board
CATALOG_PAGE = 100  # board ids read from the catalog at a time
BOARD_CONCURRENCY = 8  # boards snapshotted at once
SORT_KEY = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}\+00:00")


class SnapshotsFailed(Exception):
    """Some boards could not be recorded; the others were. Raised so the run is retried."""

    def __init__(self, taken_at: datetime, failed: dict[str, str]) -> None:
        boards = ", ".join(sorted(failed))
        super().__init__(
            f"the snapshots of {taken_at.isoformat()} failed for {len(failed)} board(s): {boards}"
        )
        self.failed = failed


@dataclass
class RunReport:
    """What one run did: the boards recorded now, those a previous attempt of the same run
    had recorded already, and those that failed (with the error)."""

    taken_at: datetime
    written: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "takenAt": snapshot_sort_key(self.taken_at),
            "written": len(self.written),
            "existing": len(self.existing),
            "failed": sorted(self.failed),
        }


def snapshot_id(board_id: str, taken_at: datetime) -> str:
    """Deterministic: the same board and scheduled time always name the same snapshot."""
    seed = f"{board_id}#{snapshot_sort_key(taken_at)}".encode()
    return hashlib.blake2b(seed, digest_size=12).hexdigest()


def scheduled_time(event: dict[str, Any], now: datetime) -> datetime:
    """The run's time: the scheduled event's ``time`` (whole seconds, UTC), or ``now``
    truncated to the second for an event that has none (a manual invocation)."""
    raw = event.get("time")
    if raw is None:
        return now.astimezone(UTC).replace(microsecond=0)
    if not isinstance(raw, str):
        raise ValueError(f"the event's time must be an ISO 8601 string, not {raw!r}")
    moment = datetime.fromisoformat(raw)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def _board_ids(services: Services) -> Iterator[list[str]]:
    after: str | None = None
    while True:
        ids, after = services.db.boards.list_board_ids(CATALOG_PAGE, after)
        if ids:
            yield ids
        if after is None:
            return


def take_snapshot(services: Services, board_id: str, taken_at: datetime, expires_at: int) -> bool:
    """Record one board's snapshot; False when this run had recorded it already."""
    board = services.boards.get_board(board_id)
    # The index, not the head: a snapshot records the top as it is at the schedule's time.
    page = services.reads.top(board_id, SNAPSHOT_SIZE, None, with_data=False, consistent=True)
    snapshot = Snapshot(
        board_id=board_id,
        snapshot_id=snapshot_id(board_id, taken_at),
        taken_at=taken_at,
        member_count=board.member_count,
        entries=page.entries,
    )
    return services.db.snapshots.put_snapshot(snapshot, expires_at)


def take_snapshots(
    services: Services,
    taken_at: datetime,
    keep_days: int,
    concurrency: int = BOARD_CONCURRENCY,
) -> RunReport:
    """Snapshot every board at ``taken_at``; raise SnapshotsFailed after the others are
    done when any board failed."""
    taken_at = taken_at.astimezone(UTC)
    expires_at = int(taken_at.timestamp()) + keep_days * 24 * 3600
    report = RunReport(taken_at)

    def one(board_id: str) -> tuple[str, bool | None, Exception | None]:
        try:
            return board_id, take_snapshot(services, board_id, taken_at, expires_at), None
        except NotFound:
            return board_id, None, None  # gone since the catalog was read: nothing to record
        except Exception as error:  # one board's failure must not stop the others
            return board_id, None, error

    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="snapshot") as pool:
        for ids in _board_ids(services):
            for board_id, written, error in pool.map(one, ids):
                if error is not None:
                    logger.error(
                        "snapshot failed",
                        extra={"boardId": board_id, "takenAt": taken_at.isoformat()},
                        exc_info=error,
                    )
                    report.failed[board_id] = f"{type(error).__name__}: {error}"
                elif written:
                    report.written.append(board_id)
                elif written is not None:
                    report.existing.append(board_id)
    logger.info("snapshots taken", extra=report.to_json())
    if report.failed:
        raise SnapshotsFailed(taken_at, report.failed)
    return report


def list_snapshots(
    services: Services, board_id: str, limit: int, cursor: str | None
) -> tuple[list[Snapshot], str | None]:
    """A page of the board's snapshots, newest first, and the cursor to the next (None at
    the end); NotFound when the board does not exist."""
    services.boards.settings(board_id)
    scope = f"{board_id}#snapshots"
    before = cursors.decode(cursor, scope, SORT_KEY) if cursor is not None else None
    now = datetime.now(UTC)  # TTL: real time
    # Snapshots past the retention that DynamoDB has not removed yet are not even read: a
    # page reads at most limit + 1 snapshots (each at most about 30 KB), however many expired.
    since = snapshot_sort_key(now - timedelta(days=settings().snapshot_retention_days))
    found, last = services.db.snapshots.list_snapshots(board_id, limit, before, int(now.timestamp()), since)
    return found, (cursors.encode(scope, last) if last is not None else None)


class SnapshotService:
    """The snapshots of every board, as the routes and the scheduled job reach them
    (``services().snapshots``, like every other service)."""

    def __init__(self, services: Services) -> None:
        self.services = services

    def take(self, taken_at: datetime, keep_days: int) -> RunReport:
        return take_snapshots(self.services, taken_at, keep_days)

    def list(self, board_id: str, limit: int, cursor: str | None) -> tuple[list[Snapshot], str | None]:
        return list_snapshots(self.services, board_id, limit, cursor)
