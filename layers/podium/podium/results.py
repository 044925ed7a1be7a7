"""Final results of a period, announced exactly once (docs/periods.md).

``PeriodResultsFunction`` runs on a schedule. For every time-windowed board it finds the
periods that ended and are not announced yet, oldest first, and for each:

1. **Waits for the log**: an event logged before the end counts in the ended period, so
   nothing is announced while ``LogIndex`` still holds one of that period's events (the
   fold deletes them as it counts them), nor before ``GRACE`` has passed since the end (a
   request that chose its period just before the end may land a moment after it, and the
   indexes are eventually consistent).
2. **Claims**: reads the final listing of the period from the index (``top``, exact), puts
   the members to tell (every one whose rank is at most the board's ``announceTop``: a tie
   at the cut tells all who share the rank) in parts named by this run, then claims the
   announcement record with a condition. Whatever run claims it, every later run announces
   exactly what it holds: the results are fixed once.
3. **Publishes** ``periodClosed`` unless the record says it was, then marks it.
4. **Tells** each member of the list, a chunk at a time, through the notifier's outbox
   (``podium.social.deliver``: the inbox first, with an id derived from the board, period
   and member, then SNS), moving the record's checkpoint after every chunk. A run killed
   midway leaves the checkpoint at its last chunk: the next one does that chunk again,
   finds those notifications in the inboxes and writes none twice.
5. **Finishes**: the record says done, and the board's ``announcedThrough`` moves to it.

SNS delivery is at least once where a run dies between a publish and its mark; each message
carries a deterministic id (``announcementId``; a notification's ``id``) to tell copies apart.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from podium import fanout, periods
from podium.dal.results import Announcement, ResultsBoard
from podium.errors import NotFound
from podium.log import logger
from podium.models import Notification, RankedEntry
from podium.social import deliver

if TYPE_CHECKING:
    from podium.ports import Announcer
    from podium.wiring import Services

GRACE = timedelta(seconds=60)  # past API Gateway's 29 s, and the indexes' lag
TOP_ENTRIES = 100  # the entries of a periodClosed message
PART_SIZE = 500  # members to tell per stored part (about 130 KB at the longest ids)
TELL_CHUNK = 100  # members told between two checkpoints (and at once)
CATALOG_PAGE = 100
CLOSED = "periodClosed"
RESULT = "periodResult"


class PeriodResultsFailed(Exception):
    """Some boards' periods could not be announced; the others were. Raised so the run is
    retried (and the next scheduled run goes on from the checkpoints anyway)."""

    def __init__(self, failed: dict[str, str]) -> None:
        super().__init__(f"announcing failed for {len(failed)} board(s): {', '.join(sorted(failed))}")
        self.failed = failed


@dataclass
class RunReport:
    """What one run did: periods announced to the end, periods waiting for their events to
    be folded (or for the grace period), and the boards that failed."""

    announced: list[str] = field(default_factory=list)  # "boardId period"
    waiting: list[str] = field(default_factory=list)
    told: int = 0  # notifications delivered by this run
    failed: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "announced": len(self.announced),
            "waiting": len(self.waiting),
            "told": self.told,
            "failed": sorted(self.failed),
        }


# -- the pure decisions -------------------------------------------------------------------


def due_periods(board: ResultsBoard, now: datetime, grace: timedelta = GRACE) -> list[str]:
    """The board's periods to announce, oldest first: those that ended at least ``grace``
    ago, are still readable (``retainPeriods``), ended after the board was created, and come
    after the last one announced."""
    current = periods.period_of(board.reset, now)
    due = []
    for back in range(board.retain_periods, 0, -1):
        period = periods.shift(board.reset, current, -back)
        end = periods.end_of(board.reset, period)
        if end + grace > now or end <= board.created_at or period <= board.announced_through:
            continue
        due.append(period)
    return due


def within_cut(entries: list[RankedEntry], announce_top: int) -> list[RankedEntry]:
    """The entries told their result: every one ranked ``announce_top`` or better. With
    shared ranks a tie at the cut is told whole (ranks 1, 2, 2 with ``announceTop`` 2: three
    members), so two members with the same score never learn different fates."""
    return [entry for entry in entries if entry.rank <= announce_top]


def announcement_id(board_id: str, period: str) -> str:
    """The same for every run, so subscribers can drop a second copy of a message."""
    return hashlib.sha256(f"{board_id}\x1f{period}\x1fclosed".encode()).hexdigest()[:24]


def closed_message(a: Announcement) -> tuple[dict[str, Any], dict[str, str]]:
    """The periodClosed message and its attributes."""
    body: dict[str, Any] = {
        "type": CLOSED,
        "announcementId": announcement_id(a.board_id, a.period),
        "boardId": a.board_id,
        "period": a.period,
        "memberCount": a.member_count,
        "entries": [entry.to_json() for entry in a.entries],
    }
    attributes = {
        "type": CLOSED,
        "boardId": a.board_id,
        "announcementId": announcement_id(a.board_id, a.period),
    }
    return body, attributes


def result_notification(a: Announcement, entry: RankedEntry) -> Notification:
    """What member ``entry`` is told; its id (and so its inbox item) is the same in every run."""
    seed = f"{a.board_id}\x1f{a.period}\x1f{entry.member_id}\x1f{RESULT}".encode()
    return Notification(
        notification_id=hashlib.sha256(seed).hexdigest()[:24],
        type=RESULT,
        board_id=a.board_id,
        member_id=entry.member_id,
        by_member_id=None,
        score=entry.score,
        by_score=None,
        created_us=a.announced_us,
        period=a.period,
        rank=entry.rank,
    )


# -- the job ------------------------------------------------------------------------------


class PeriodResults:
    def __init__(self, services: Services, publisher: Announcer) -> None:
        self.services = services
        self.db = services.db
        self.publisher = publisher

    def announce_due(self, now: datetime) -> RunReport:
        """Announce every due period of every board; raise PeriodResultsFailed at the end
        when a board failed (the others are done)."""
        now = now.astimezone(UTC)
        report = RunReport()
        for boards in self._boards():
            for board in boards:
                try:
                    for period in due_periods(board, now):
                        if not self.announce_period(board, period, now, report):
                            report.waiting.append(f"{board.board_id} {period}")
                            break  # oldest first: a later period waits for this one
                        report.announced.append(f"{board.board_id} {period}")
                except NotFound:
                    continue  # the board or period is gone since it was listed
                except Exception as error:  # one board's failure must not stop the others
                    logger.error("announcing failed", extra={"boardId": board.board_id}, exc_info=error)
                    report.failed[board.board_id] = f"{type(error).__name__}: {error}"
        logger.info("period results", extra=report.to_json())
        if report.failed:
            raise PeriodResultsFailed(report.failed)
        return report

    def _boards(self) -> Iterator[list[ResultsBoard]]:
        after: str | None = None
        while True:
            ids, after = self.db.boards.list_board_ids(CATALOG_PAGE, after)
            if ids:
                yield self.db.results.windowed_boards(ids)
            if after is None:
                return

    def announce_period(self, board: ResultsBoard, period: str, now: datetime, report: RunReport) -> bool:
        """Announce one period to the end; False when it must wait (its events are not all
        folded yet)."""
        announcement = self.db.results.get_announcement(board.board_id, period)
        if announcement is None:
            if self.db.eventlog.period_has_events(board.board_id, period):
                return False
            announcement = self._claim(board, period, now)
        if not announcement.closed:
            self.publisher.publish_message(*closed_message(announcement))
            self.db.results.mark_period_closed(board.board_id, period)
        report.told += self._tell(announcement)
        self.db.results.finish_announcement(board.board_id, period)
        return True

    def _claim(self, board: ResultsBoard, period: str, now: datetime) -> Announcement:
        """Read the final listing, store who is told in parts of this run, and claim the
        record; the record as claimed (by this run, or by another one first)."""
        listed, top, member_count = self._final_listing(board, period)
        run = uuid.uuid4().hex[:12]
        expires = periods.expires_at(board.reset, period, board.retain_periods)
        parts = [listed[i : i + PART_SIZE] for i in range(0, len(listed), PART_SIZE)]
        self.db.results.put_announced_parts(board.board_id, period, run, parts, expires)
        mine = Announcement(
            board_id=board.board_id,
            period=period,
            run=run,
            announced_us=_us(now),
            member_count=member_count,
            entries=top,
            listed=len(listed),
            parts=len(parts),
        )
        if self.db.results.claim_announcement(mine, expires):
            return mine
        claimed = self.db.results.get_announcement(board.board_id, period)
        assert claimed is not None
        return claimed

    def _final_listing(
        self, board: ResultsBoard, period: str
    ) -> tuple[list[RankedEntry], list[RankedEntry], int]:
        """The members to tell, the top 100 and the period's member count, read from the
        index page by page (``consistent``: the index, not the head) until past the cut."""
        reads = self.services.reads
        listed: list[RankedEntry] = []
        top: list[RankedEntry] = []
        cursor: str | None = None
        total = 0
        while True:
            page = reads.top(board.board_id, PART_SIZE, cursor, False, period, consistent=True)
            total = page.total
            if len(top) < TOP_ENTRIES:
                top.extend(page.entries[: TOP_ENTRIES - len(top)])
            told = within_cut(page.entries, board.announce_top)
            listed.extend(told)
            cursor = page.next_cursor
            if cursor is None or (len(told) < len(page.entries) and len(top) >= TOP_ENTRIES):
                return listed, top, total

    def _tell(self, a: Announcement) -> int:
        """Tell the members from the checkpoint on, a chunk at a time; how many were new."""
        told, new = a.told, 0
        part: list[RankedEntry] = []
        part_number = -1
        while told < a.listed:
            if told // PART_SIZE != part_number:
                part_number = told // PART_SIZE
                part = self.db.results.announced_part(a.board_id, a.period, a.run, part_number)
            offset = told % PART_SIZE
            chunk = part[offset : offset + TELL_CHUNK]
            stored = fanout.gather(
                lambda entry: deliver(self.db.social, self.publisher, result_notification(a, entry)), chunk
            )
            new += sum(stored)
            self.db.results.advance_announcement(a.board_id, a.period, told, told + len(chunk))
            told += len(chunk)
        return new


def _us(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000)
