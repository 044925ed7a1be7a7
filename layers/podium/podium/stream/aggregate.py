"""The aggregating consumer: each board's ``memberCount`` (``counts``), rollups into the
boards of ``rollupTo`` (``rollups``), and the head and count tree that make top-k and rank
cheap (``upkeep``); the event-log fold runs per batch beside it (``fold``).

One consumer does all of these because DynamoDB Streams serves at most two readers per
shard without throttling; the notifier is the other. Every effect is applied once,
however often a record is delivered: the counts and the rollups are keyed by the stream
record's own event id (a mark), the count tree by the score item's version, which its
entries carry (docs/count-tree.md). A record the redrive replays, out of the stream's
order, is applied as ``replayed``: the tree then checks it against the member's score
item.

The stream's batches are applied a batch at a time where a batch can carry many records in
one request (``keep_batch``: the counts, the tree's reports, the heads), and a record at a
time where it cannot (``roll_up``); docs/streams.md, "Throughput".
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from podium.models import BoardSettings, Limits
from podium.ports import Repositories
from podium.recent import Recent
from podium.stream.counts import apply_count, apply_counts
from podium.stream.placements import fix_placements
from podium.stream.records import Record, index_keys_only, score_record
from podium.stream.rollups import roll_up
from podium.stream.upkeep import RankUpkeep

SettingsOf = Callable[[str], BoardSettings]
TARGET_LIMITS_KEEP_SECONDS = 1.0  # a rollup target's limits, kept by the aggregator
Clock = Callable[[], datetime]


class Aggregator:
    def __init__(self, db: Repositories, settings_of: SettingsOf, clock: Clock) -> None:
        self.db = db
        self.settings_of = settings_of
        self.clock = clock
        self._limits: Recent[str, Limits] = Recent(TARGET_LIMITS_KEEP_SECONDS)
        self.upkeep = RankUpkeep(db.structures, db.index, db.tree, db.members, settings_of, clock)

    def apply(self, record: Record, *, replayed: bool = False) -> None:
        """Every effect of one record: its count, its tree, its rollups (a replay, and
        tests that apply records one by one; the stream's batches take ``keep_batch`` and
        ``roll_up``)."""
        apply_count(self.db.boards, self.settings_of, record)
        score = score_record(record)
        if score is None:
            return
        self.upkeep.keep_tree(score, replayed=replayed)
        self.roll_up(record)

    def roll_up(self, record: Record) -> None:
        """The record's rollups into the boards of ``rollupTo``."""
        score = score_record(record)
        if score is not None and score.new is not None and (score.changed or score.event_name == "INSERT"):
            for target in self.settings_of(score.board_id).rollup_to:
                limits = self._target_limits(target)
                roll_up(
                    self.db.members,
                    self.settings_of,
                    self.clock,
                    score,
                    target,
                    limits,
                    self.db.boards.deleted_at,
                )

    def _target_limits(self, target: str) -> Limits:
        """A rollup target's limits as they are now, or were within the last second: read
        once a second per target, not once per record (a batch of a busy source holds
        hundreds), the second a change of limits takes anywhere (docs/security.md)."""
        kept = self._limits.get(target)
        if kept is None:
            board = self.db.boards.get_board(target)
            kept = self._limits.keep(target, board.policy.limits if board is not None else Limits())
        return kept

    def keep_heads(self, records: list[Record]) -> set[str]:
        """Per batch: the heads of the boards whose scores the batch changes; the
        eventIDs of the records whose head could not be written."""
        changes = [change for change in map(score_record, records) if change is not None]
        return self.upkeep.keep_heads(changes)

    def keep_batch(self, records: list[Record]) -> set[str]:
        """Per batch from the stream: the heads, the counts (one transaction per count and
        99 records) and the count trees (the leaves per record, the reports per batch);
        the eventIDs of the records any of them failed on."""
        fix_placements(records, self.db.reshards, self.settings_of)  # a re-shard's late writes
        # A re-shard's own updates (an item keyed in the other index) change no ranking.
        ranked = [record for record in records if not index_keys_only(record)]
        changes = [change for change in map(score_record, ranked) if change is not None]
        failed = self.upkeep.keep_heads(changes)
        failed |= apply_counts(self.db.boards, self.settings_of, ranked)
        return failed | self.upkeep.keep_trees(changes)
