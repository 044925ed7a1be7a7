"""Keeping the head and the score buckets from the change stream (the aggregator calls
this), and rebuilding them from the index (maintenance, and the benchmark's bulk loads).

See ``podium.head`` and ``podium.buckets`` for what they hold and why the counts stay
exact; docs/performance.md for what each costs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime

from podium import buckets, periods
from podium import head as heads
from podium.buckets import Bucket
from podium.changes import ScoreRecord
from podium.keys import ALL_TIME, member_of_key, rank_partition_key
from podium.models import BoardSettings
from podium.ranking import gather_top, merge_shards
from podium.store import BucketChange, BucketMoved, Store

SettingsOf = Callable[[str], BoardSettings]
Clock = Callable[[], datetime]

MAX_ATTEMPTS = 32
LAYOUT_MAX_AGE_S = 1.0  # a cached bucket layout is read again after this (splits are rare)
RECOUNT_RETRY_S = 5.0  # a dirty bucket is re-counted at most this often per consumer

log = logging.getLogger(__name__)


class Upkeep:
    def __init__(self, store: Store, settings_of: SettingsOf, clock: Clock) -> None:
        self.store = store
        self.settings_of = settings_of
        # The writers' clock: a bucket's snapshot times are compared with scores' reachedAt.
        self.clock = clock
        self._layouts: dict[tuple[str, str], tuple[float, list[Bucket]]] = {}
        self._recount_tried: dict[tuple[str, str, str], float] = {}

    # -- shared -----------------------------------------------------------------------

    def _now_us(self) -> int:
        return int(self.clock().timestamp() * 1_000_000)

    def _partitions(self, board_id: str, period: str) -> list[str]:
        shards = self.settings_of(board_id).shards
        return [rank_partition_key(board_id, period, shard) for shard in range(shards)]

    def _expires(self, board_id: str, period: str) -> int | None:
        if period == ALL_TIME:
            return None
        settings = self.settings_of(board_id)
        return periods.expires_at(settings.reset, period, settings.retain_periods)

    def index_head(self, board_id: str, period: str, want: int) -> list[str]:
        """The first ``want`` sort keys of the index, best first, and one more key when
        more exist (``ranking.gather_top``)."""
        partitions = self._partitions(board_id, period)
        keys, _ = gather_top(self.store.page_reader(partitions), len(partitions), None, want)
        return keys

    def index_range(self, board_id: str, period: str, lo: str, hi: str | None) -> list[str]:
        pages = self.store.gather(
            lambda p: self.store.keys_in_range(p, lo, hi), self._partitions(board_id, period)
        )
        return merge_shards(pages, sum(len(page) for page in pages))

    # -- the head: once per batch and board ---------------------------------------------

    def keep_heads(self, records: Sequence[ScoreRecord]) -> set[str]:
        """Apply the batch's score changes to each board's head; the eventIDs of the
        records whose head could not be written (they are retried)."""
        groups: dict[tuple[str, str], list[ScoreRecord]] = {}
        for record in records:
            if record.old_sort_key != record.new_sort_key:
                groups.setdefault((record.board_id, record.period), []).append(record)
        failed: set[str] = set()
        for (board_id, period), changes in groups.items():
            try:
                self.keep_head(board_id, period, changes)
            except Exception:
                log.exception("could not keep the head of %s (%s)", board_id, period)
                failed.update(change.event_id for change in changes)
        return failed

    def keep_head(self, board_id: str, period: str, changes: Sequence[ScoreRecord]) -> None:
        for _ in range(MAX_ATTEMPTS):
            current = self.store.get_head(board_id, period, consistent=True)
            if current is None:
                # The index already shows these changes (it is written before the stream).
                head = self.refilled(board_id, period, version=0)
            else:
                head = current
                for change in changes:
                    head = heads.apply_change(
                        head, change.member_id, change.old_sort_key, change.new_sort_key, member_of_key
                    )
                if head.needs_refill:
                    head = self.refilled(board_id, period, version=current.version)
                if heads.same_content(head, current):
                    return
            if self.store.put_head(board_id, period, head, self._expires(board_id, period)):
                return
        raise RuntimeError(f"the head of {board_id} is contended: retrying the batch")

    def refilled(self, board_id: str, period: str, version: int) -> heads.Head:
        keys = self.index_head(board_id, period, heads.LADDER_REACH)
        return heads.from_index(keys, member_of_key, version)

    # -- the buckets: once per stream record ----------------------------------------------

    def _layout(self, board_id: str, period: str, *, fresh: bool) -> list[Bucket]:
        cached = self._layouts.get((board_id, period))
        if not fresh and cached is not None and time.monotonic() - cached[0] < LAYOUT_MAX_AGE_S:
            return cached[1]
        layout = self.store.list_buckets(board_id, period, consistent=True)
        if not layout:
            self.store.create_first_bucket(board_id, period, self._expires(board_id, period))
            layout = self.store.list_buckets(board_id, period, consistent=True)
        self._layouts[(board_id, period)] = (time.monotonic(), layout)
        return layout

    def keep_buckets(self, record: ScoreRecord) -> None:
        """Move the member's count from the bucket of its old sort key to the bucket of
        its new one, once per record, deciding per bucket whether its snapshot already
        holds the change (``podium.buckets.classify``)."""
        old, new = record.old_sort_key, record.new_sort_key
        if old == new:
            return
        board_id, period = record.board_id, record.period
        written_from = record.changed_us
        # A write's time is exact (the score's reachedAt); a removal's is the stream's
        # timestamp, rounded down to the second.
        written_to = written_from if new is not None else written_from + 1_000_000
        for attempt in range(MAX_ATTEMPTS):
            layout = self._layout(board_id, period, fresh=attempt > 0)
            deltas: dict[int, int] = {}
            if old is not None:
                index = buckets.locate(layout, old)
                deltas[index] = deltas.get(index, 0) - 1
            if new is not None:
                index = buckets.locate(layout, new)
                deltas[index] = deltas.get(index, 0) + 1
            changes = []
            for index, delta in deltas.items():
                verdict = buckets.classify(layout[index], written_from, written_to)
                if delta != 0 and verdict != buckets.SKIP:
                    changes.append(BucketChange(layout[index], delta, dirty=verdict == buckets.DIRTY))
            if not changes:
                return
            try:
                applied = self.store.apply_bucket_changes(
                    f"BUCKETS#{record.event_id}", board_id, period, changes, self._now_us()
                )
            except BucketMoved:
                continue
            if applied:
                self._after_change(board_id, period, layout, changes)
            return
        raise RuntimeError(f"the buckets of {board_id} keep moving: retrying the record")

    def _after_change(
        self, board_id: str, period: str, layout: list[Bucket], changes: Sequence[BucketChange]
    ) -> None:
        now = self._now_us()
        for change in changes:
            index = layout.index(change.bucket)
            bucket = change.bucket
            layout[index] = Bucket(
                bucket.lo,
                bucket.count + (0 if change.dirty else change.delta),
                bucket.epoch,
                bucket.snapshot_from_us,
                bucket.snapshot_to_us,
                bucket.dirty or change.dirty,
                now,
            )
            if layout[index].count > buckets.SPLIT_AT:
                self.split(board_id, period, bucket.lo)
        self._recount_one_quiet(board_id, period, layout, now)

    def split(self, board_id: str, period: str, lo: str) -> bool:
        """Split the bucket starting at ``lo`` at its median key, both halves counted
        from the index; False when it changed meanwhile (a later change tries again)."""
        layout = self.store.list_buckets(board_id, period, consistent=True)
        index = next((i for i, b in enumerate(layout) if b.lo == lo), None)
        if index is None:
            return False
        bucket = layout[index]
        high = buckets.upper_bound(layout, index)
        started = self._now_us()
        keys = self.index_range(board_id, period, bucket.lo, buckets.just_below(high) if high else None)
        ended = self._now_us()
        where = buckets.median_split(keys)
        self._layouts.pop((board_id, period), None)
        if where is None:
            return False
        middle, below, above = where
        dirty = not buckets.snapshot_is_clean(bucket.last_change_us, started)
        lower = Bucket(bucket.lo, below, bucket.epoch + 1, started, ended, dirty, bucket.last_change_us)
        upper = Bucket(middle, above, 1, started, ended, dirty, bucket.last_change_us)
        expires = self._expires(board_id, period)
        return self.store.split_bucket(board_id, period, bucket, lower, upper, expires)

    def _recount_one_quiet(self, board_id: str, period: str, layout: list[Bucket], now: int) -> None:
        """Re-count one dirty bucket that no change has reached for a while, so reads can
        trust its count again."""
        for index, bucket in enumerate(layout):
            if not bucket.dirty or now - bucket.last_change_us < buckets.RECOUNT_QUIET_US:
                continue
            tried = self._recount_tried.get((board_id, period, bucket.lo), 0.0)
            if time.monotonic() - tried < RECOUNT_RETRY_S:
                continue
            self._recount_tried[(board_id, period, bucket.lo)] = time.monotonic()
            self.recount(board_id, period, bucket, buckets.upper_bound(layout, index))
            self._layouts.pop((board_id, period), None)
            return

    def recount_quiet(self, board_id: str, period: str) -> int:
        """Re-count every dirty bucket of the board that has been quiet (the scheduled job
        does this, so the buckets come clean once writes stop); how many came clean."""
        layout = self.store.list_buckets(board_id, period, consistent=True)
        now = self._now_us()
        cleaned = 0
        for index, bucket in enumerate(layout):
            if bucket.dirty and now - bucket.last_change_us >= buckets.RECOUNT_QUIET_US:
                cleaned += self.recount(board_id, period, bucket, buckets.upper_bound(layout, index))
        self._layouts.pop((board_id, period), None)
        return cleaned

    def recount(self, board_id: str, period: str, bucket: Bucket, high: str | None) -> bool:
        started = self._now_us()
        hi = buckets.just_below(high) if high else None
        count = sum(
            self.store.gather(
                lambda p: self.store.count_range(p, bucket.lo, hi), self._partitions(board_id, period)
            )
        )
        ended = self._now_us()
        dirty = not buckets.snapshot_is_clean(bucket.last_change_us, started)
        counted = Bucket(bucket.lo, count, bucket.epoch + 1, started, ended, dirty, bucket.last_change_us)
        return self.store.recount_bucket(board_id, period, bucket, counted, self._expires(board_id, period))

    # -- maintenance ------------------------------------------------------------------

    def rebuild(self, board_id: str, period: str = ALL_TIME) -> int:
        """Rebuild a board's head and buckets from the index (a board whose scores were
        bulk-loaded, or that predates them). Returns the number of buckets."""
        started = self._now_us()
        keys = self.index_range(board_id, period, buckets.BELOW_EVERY_KEY, None)
        ended = self._now_us()
        cuts = buckets.cut(keys, buckets.REBUILD_SIZE)
        layout = [Bucket(lo, count, 1, started, ended, False, 0) for lo, count in cuts]
        expires = self._expires(board_id, period)
        self.store.replace_buckets(board_id, period, layout, expires)
        current = self.store.get_head(board_id, period, consistent=True)
        head = heads.from_index(
            keys[: heads.LADDER_REACH + 1], member_of_key, current.version if current else 0
        )
        if not self.store.put_head(board_id, period, head, expires):
            raise RuntimeError(f"the head of {board_id} changed during the rebuild")
        self._layouts.pop((board_id, period), None)
        return len(layout)
