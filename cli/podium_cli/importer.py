"""The engine of ``podium import``: the file's records sent by a pool of threads, each
written down in the checkpoint the moment its answer comes.

Every record of one member goes to the same thread, in file order, so that a member named
on two lines ends with the later line's score, as a reader of the file expects, whatever
the number of threads. A record is one ``PUT .../members/{memberId}``, which is
idempotent: a record sent again after an interruption changes nothing more.
"""

from __future__ import annotations

import queue
import threading
import time
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from podium_cli.checkpoint import Checkpoint
from podium_cli.readers import BadLine, Record, Row

QUEUE_PER_WORKER = 32  # records read ahead for each thread
POLL_SECONDS = 0.2  # how often a blocked hand-over looks whether the import is stopping


class LineRefused(Exception):
    """The API refused this record alone (400, 413): a bad line, not a failed import."""


class MemberWriter(Protocol):
    def put_member(self, board_id: str, member_id: str, score: Decimal, data: dict[str, Any] | None) -> None:
        """Write one member's score and data (``PUT .../members/{memberId}``); raise
        LineRefused when the API refuses the record, anything else when it cannot be sent."""


@dataclass
class ImportResult:
    """What one run of an import did."""

    records: int = 0  # read from the file (all of them, unless the import stopped)
    skipped_done: int = 0  # done by an earlier run, not sent again
    sent: int = 0  # written by this run
    bad_lines: list[BadLine] = field(default_factory=list)  # this run's and earlier runs'
    seconds: float = 0.0
    interrupted: bool = False
    failure: str | None = None  # why the import stopped before the end

    @property
    def complete(self) -> bool:
        return not self.interrupted and self.failure is None

    @property
    def rate(self) -> float:
        return self.sent / self.seconds if self.seconds > 0 else 0.0


class RateLimit:
    """At most ``per_second`` sends a second across the threads (``--rate``), spaced
    evenly, for an import that must leave a live board's capacity to its players."""

    def __init__(self, per_second: float | None) -> None:
        self.interval = 1.0 / per_second if per_second else 0.0
        self._next = time.monotonic()
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            at = max(self._next, now)
            self._next = at + self.interval
        if at > now:
            time.sleep(at - now)


class Importer:
    """Send the records of one file to one board, ``workers`` at a time."""

    def __init__(
        self,
        writer: MemberWriter,
        board_id: str,
        checkpoint: Checkpoint,
        *,
        workers: int = 16,
        rate: float | None = None,
        strict: bool = False,
        on_record: Callable[[], None] = lambda: None,
    ) -> None:
        self.writer = writer
        self.board_id = board_id
        self.checkpoint = checkpoint
        self.workers = max(1, workers)
        self.rate = RateLimit(rate)
        self.strict = strict
        self.on_record = on_record  # called once a record is done (the progress bar)
        self.stopping = threading.Event()
        self._sent = 0
        self._failure: str | None = None
        self._lock = threading.Lock()

    def run(self, records: Iterable[Record]) -> ImportResult:
        result = ImportResult()
        lanes: list[queue.Queue[tuple[int, Row] | None]] = [
            queue.Queue(QUEUE_PER_WORKER) for _ in range(self.workers)
        ]
        threads = [threading.Thread(target=self._work, args=(lane,), daemon=True) for lane in lanes]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        try:
            self._feed(records, lanes, result)
        except KeyboardInterrupt:
            result.interrupted = True
            self.stopping.set()
        finally:
            for lane in lanes:
                self._hand_over(lane, None, wait_while_stopping=True)
            for thread in threads:
                thread.join()
            result.seconds = time.monotonic() - started
        result.sent = self._sent
        result.failure = self._failure
        result.bad_lines = [BadLine(line, reason) for line, reason in self._rejections()]
        return result

    def _feed(
        self,
        records: Iterable[Record],
        lanes: list[queue.Queue[tuple[int, Row] | None]],
        result: ImportResult,
    ) -> None:
        for number, record in enumerate(records):
            if self.stopping.is_set():
                return  # the rest is the next run's, from the checkpoint
            result.records += 1
            if self.checkpoint.is_done(number):
                result.skipped_done += 1  # the progress bar starts past these
            elif isinstance(record, BadLine):
                self.checkpoint.rejected(number, record.line, record.reason)
                self.on_record()
                if self.strict:
                    self._fail(f"line {record.line}: {record.reason} (--strict stops at the first bad line)")
            else:
                lane = lanes[zlib.crc32(record.member_id.encode()) % len(lanes)]
                self._hand_over(lane, (number, record))

    def _hand_over(
        self,
        lane: queue.Queue[tuple[int, Row] | None],
        item: tuple[int, Row] | None,
        *,
        wait_while_stopping: bool = False,
    ) -> None:
        """Put ``item`` on a thread's queue, waiting for room, unless the import stops."""
        while True:
            try:
                lane.put(item, timeout=POLL_SECONDS)
                return
            except queue.Full:
                if self.stopping.is_set() and not wait_while_stopping:
                    return

    def _work(self, lane: queue.Queue[tuple[int, Row] | None]) -> None:
        while (item := lane.get()) is not None:
            if self.stopping.is_set():
                continue  # drain: the queue's records stay undone, for the next run
            number, row = item
            self.rate.wait()
            try:
                self.writer.put_member(self.board_id, row.member_id, row.score, row.data)
            except LineRefused as refused:
                self.checkpoint.rejected(number, row.line, str(refused))
                if self.strict:
                    self._fail(f"line {row.line}: {refused} (--strict stops at the first bad line)")
            except Exception as error:  # the API cannot be reached, or refuses the import
                self._fail(f"line {row.line} (memberId {row.member_id}): {error}")
                continue
            else:
                self.checkpoint.done(number)
                with self._lock:
                    self._sent += 1
            self.on_record()

    def _fail(self, why: str) -> None:
        with self._lock:
            if self._failure is None:
                self._failure = why
        self.stopping.set()

    def _rejections(self) -> list[tuple[int, str]]:
        return sorted(self.checkpoint.progress.rejected.values())
