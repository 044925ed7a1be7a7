"""Rank upkeep: keeping each board's head and score buckets from the change stream (the
aggregator calls this), and rebuilding them from the index (maintenance, and the
benchmark's bulk loads).

See ``podium.head`` and ``podium.buckets`` for what they hold and why the counts stay
exact; docs/performance.md for what each costs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

from podium import buckets, fanout, keys, periods
from podium import head as heads
from podium.dal import schema
from podium.errors import BucketMoved
from podium.indexreads import top_keys
from podium.keys import member_of_key
from podium.models import BoardSettings, Bucket, BucketStep, FinishedSplit
from podium.periods import ALL_TIME
from podium.ports import IndexReader, StructureStore
from podium.ranking import merge_shards
from podium.stream.records import ScoreRecord

SettingsOf = Callable[[str], BoardSettings]
Clock = Callable[[], datetime]

MAX_ATTEMPTS = 32
LAYOUT_MAX_AGE_S = 1.0  # a cached bucket layout is read again after this (splits are rare)
SNAPSHOTS_CACHED = 256  # bucket snapshots kept in memory (each up to ~10 KB)

log = logging.getLogger(__name__)


class _Knows:
    """What buckets know of one member, for ``buckets.steps``: the scan from the cached
    snapshot; the moved entry read from the bucket's state, or first assumed absent (moved
    entries are rare, and the record's transaction is conditional on the entry it assumed:
    a wrong guess fails it, and the retry reads)."""

    def __init__(
        self, upkeep: RankUpkeep, board_id: str, period: str, member: str, *, optimistic: bool
    ) -> None:
        self.upkeep, self.board_id, self.period, self.member = upkeep, board_id, period, member
        self.optimistic = optimistic

    def scanned(self, bucket: Bucket) -> bool:
        return self.member in self.upkeep.snapshot(self.board_id, self.period, bucket)

    def moved(self, bucket: Bucket) -> int | None:
        if self.optimistic:
            return None
        state = self.upkeep.structures.bucket_state(self.board_id, self.period, bucket.lo)
        return state.moved.get(self.member)


def _inclusive(high: str | None) -> str | None:
    """A bucket's exclusive upper end as the inclusive one a range query takes."""
    return buckets.just_below(high) if high is not None else None


class RankUpkeep:
    def __init__(
        self, structures: StructureStore, index: IndexReader, settings_of: SettingsOf, clock: Clock
    ) -> None:
        self.structures = structures
        self.index = index
        self.settings_of = settings_of
        # The writers' clock: a bucket's snapshot times are compared with scores' reachedAt.
        self.clock = clock
        self._layouts: dict[tuple[str, str], tuple[float, list[Bucket]]] = {}
        self._snapshots: dict[tuple[str, str, str, int], frozenset[str]] = {}

    # -- shared -----------------------------------------------------------------------

    def _now_us(self) -> int:
        return int(self.clock().timestamp() * 1_000_000)

    def _partitions(self, board_id: str, period: str) -> list[str]:
        return keys.partitions(board_id, self.settings_of(board_id), period)

    def _expires(self, board_id: str, period: str) -> int | None:
        if period == ALL_TIME:
            return None
        settings = self.settings_of(board_id)
        return periods.expires_at(settings.reset, period, settings.retain_periods)

    def index_head(self, board_id: str, period: str, want: int) -> list[str]:
        """The first ``want`` sort keys of the index, best first, and one more key when
        more exist (``ranking.gather_top``)."""
        found, _ = top_keys(self.index, self._partitions(board_id, period), None, want)
        return found

    def index_range(self, board_id: str, period: str, lo: str, hi: str | None) -> list[str]:
        """Every key of the board's index in ``[lo, hi]``, in listing order."""
        pages = fanout.gather(
            lambda p: self.index.keys_in_range(p, lo, hi), self._partitions(board_id, period)
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
            stored = self.structures.get_head(board_id, period, consistent=True)
            if stored is None:
                # The index already shows these changes (it is written before the stream).
                head = self.refilled(board_id, period, version=0)
            else:
                current = head = heads.read(stored)
                for change in changes:
                    head = heads.apply_change(
                        head, change.member_id, change.old_sort_key, change.new_sort_key, member_of_key
                    )
                if head.needs_refill:
                    head = self.refilled(board_id, period, version=current.version)
                if heads.same_content(head, current):
                    return
            if self.structures.put_head(
                board_id, period, heads.to_item(head), self._expires(board_id, period)
            ):
                return
        raise RuntimeError(f"the head of {board_id} is contended: retrying the batch")

    def refilled(self, board_id: str, period: str, version: int) -> heads.Head:
        found = self.index_head(board_id, period, heads.LADDER_REACH)
        return heads.from_index(found, member_of_key, version)

    # -- the buckets: once per stream record ----------------------------------------------

    def _layout(self, board_id: str, period: str, *, fresh: bool) -> list[Bucket]:
        cached = self._layouts.get((board_id, period))
        if not fresh and cached is not None and time.monotonic() - cached[0] < LAYOUT_MAX_AGE_S:
            return cached[1]
        layout = self.structures.list_buckets(board_id, period, consistent=True)
        if not layout:
            first = Bucket(buckets.BELOW_EVERY_KEY, 0, 1)
            self.structures.create_first_bucket(board_id, period, first, self._expires(board_id, period))
            layout = self.structures.list_buckets(board_id, period, consistent=True)
        self._layouts[(board_id, period)] = (time.monotonic(), layout)
        return layout

    def snapshot(self, board_id: str, period: str, bucket: Bucket) -> frozenset[str]:
        """The members a bucket's last scan showed in it (never changes: cached)."""
        key = (board_id, period, bucket.lo, bucket.snapshot_epoch)
        found = self._snapshots.get(key)
        if found is None:
            found = self.structures.bucket_snapshot(board_id, period, bucket.lo, bucket.snapshot_epoch)
            if len(self._snapshots) > SNAPSHOTS_CACHED:
                self._snapshots.clear()
            self._snapshots[key] = found
        return found

    def keep_buckets(self, record: ScoreRecord) -> None:
        """Move the member's count from the bucket of its old sort key to the bucket of
        its new one, once per record, as ``podium.buckets.steps`` decides (a bucket whose
        last scan may already show the change goes by what its count has of the member)."""
        old, new = record.old_sort_key, record.new_sort_key
        if old == new:
            return
        board_id, period = record.board_id, record.period
        change = buckets.Change(buckets.member_hash(record.member_id), old, new, record.written_us)
        for attempt in range(MAX_ATTEMPTS):
            layout = self._layout(board_id, period, fresh=attempt > 0)
            knows = _Knows(self, board_id, period, change.member, optimistic=attempt == 0)
            steps = buckets.steps(layout, change, knows)
            if not steps:
                return
            try:
                applied = self.structures.apply_bucket_steps(
                    schema.buckets_mark(record.event_id), board_id, period, change.member, steps
                )
            except BucketMoved:
                continue
            if applied:
                self._after_change(board_id, period, layout, steps)
            return
        raise RuntimeError(f"the buckets of {board_id} keep moving: retrying the record")

    def _after_change(
        self, board_id: str, period: str, layout: list[Bucket], steps: Sequence[BucketStep]
    ) -> None:
        """Keep the cached layout's counts, and start or finish the splits they call for."""
        now = self._now_us()
        for step in steps:
            index = layout.index(step.bucket)
            bucket = replace(step.bucket, count=step.bucket.count + step.delta)
            layout[index] = bucket
            if not bucket.splitting and bucket.count > buckets.SPLIT_AT:
                self.start_split(board_id, period, bucket.lo)
            elif bucket.splitting and now >= bucket.split_since_us + buckets.SETTLE_US:
                self.finish_split(board_id, period, bucket.lo)

    def _fresh_bucket(self, board_id: str, period: str, lo: str) -> tuple[Bucket, str | None] | None:
        """The bucket starting at ``lo`` as it is now, and its exclusive upper end."""
        layout = self.structures.list_buckets(board_id, period, consistent=True)
        self._layouts.pop((board_id, period), None)
        index = next((i for i, b in enumerate(layout) if b.lo == lo), None)
        return None if index is None else (layout[index], buckets.upper_bound(layout, index))

    def start_split(self, board_id: str, period: str, lo: str) -> bool:
        """Step 1 of a split (``podium.buckets``): choose where to cut the bucket starting
        at ``lo`` from the index, and from now on have every record applied to it record
        which part its member lands in. False when the bucket changed meanwhile (a later
        record tries again)."""
        found = self._fresh_bucket(board_id, period, lo)
        if found is None or found[0].splitting:
            return False
        bucket, high = found
        cuts = buckets.choose_cuts(self.index_range(board_id, period, bucket.lo, _inclusive(high)))
        if not cuts:
            return False
        expires = self._expires(board_id, period)
        return self.structures.start_split(board_id, period, bucket, cuts, self._now_us(), expires)

    def finish_split(self, board_id: str, period: str, lo: str) -> bool:
        """Step 2 of a split, once it has settled: the parts, counted from a scan of the
        bucket's range and the parts recorded since the split began."""
        for _ in range(MAX_ATTEMPTS):
            found = self._fresh_bucket(board_id, period, lo)
            if found is None:
                return False
            bucket, high = found
            if not bucket.splitting or self._now_us() < bucket.split_since_us + buckets.SETTLE_US:
                return False
            state = self.structures.bucket_state(board_id, period, lo)
            found_keys = self.index_range(board_id, period, bucket.lo, _inclusive(high))
            scan_end = self._now_us()
            scanned = {
                buckets.member_hash(member_of_key(k)): buckets.part(bucket, k, high) for k in found_keys
            }
            pieces = len(bucket.cuts) + 1
            counts, moved = buckets.split_counts(scanned, state.parts, pieces)
            starts = (bucket.lo, *bucket.cuts)
            epochs = [bucket.epoch + 1] + [1] * (pieces - 1)
            split = FinishedSplit(
                old=bucket,
                state_version=state.version,
                pieces=[
                    Bucket(start, count, epoch, scan_end, epoch)
                    for start, count, epoch in zip(starts, counts, epochs, strict=True)
                ],
                moved=moved,
                scanned=[
                    frozenset(m for m, part in scanned.items() if part == piece)
                    for piece in range(1, pieces + 1)
                ],
            )
            if self.structures.finish_split(board_id, period, split, self._expires(board_id, period)):
                return True
        raise RuntimeError(f"a split of {board_id}'s buckets keeps being overtaken by records")

    def finish_splits(self, board_id: str, period: str) -> int:
        """Finish every settled split of the board (the scheduled job does this, for boards
        whose stream went quiet before a record could); how many were finished."""
        layout = self.structures.list_buckets(board_id, period, consistent=True)
        now = self._now_us()
        settled = [b.lo for b in layout if b.splitting and now >= b.split_since_us + buckets.SETTLE_US]
        return sum(self.finish_split(board_id, period, lo) for lo in settled)

    # -- maintenance ------------------------------------------------------------------

    def rebuild(self, board_id: str, period: str = ALL_TIME, ranked: Sequence[str] | None = None) -> int:
        """Rebuild a board's head and buckets from the index (a board whose scores were
        bulk-loaded, or that predates them), or from the sort keys ``ranked`` (the
        consistency checker's, taken from the score items). Returns the number of buckets."""
        if ranked is not None:
            found = sorted(ranked)
        else:
            found = self.index_range(board_id, period, buckets.BELOW_EVERY_KEY, None)
        layout = [Bucket(lo, count, 1) for lo, count in buckets.cut(found, buckets.REBUILD_SIZE)]
        expires = self._expires(board_id, period)
        self.structures.replace_buckets(board_id, period, layout, expires)
        current = self.structures.get_head(board_id, period, consistent=True)
        head = heads.from_index(
            found[: heads.LADDER_REACH + 1], member_of_key, current.version if current else 0
        )
        if not self.structures.put_head(board_id, period, heads.to_item(head), expires):
            raise RuntimeError(f"the head of {board_id} changed during the rebuild")
        self._layouts.pop((board_id, period), None)
        return len(layout)
