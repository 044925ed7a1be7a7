"""The consistency checker of a board (``make verify BOARD=...``): it reads the board's
items and everything derived from them (the ranking index, the head, the count tree,
``memberCount``, the period's count), names every difference (``podium.inspection`` says
what is compared with what), and with ``repair`` puts each right, then checks again.

It expects a quiet board: writers stopped and the stream drained. On a busy board a check
may name differences that are only changes in flight, and a repair is refused where a
writer got there first (each repair is conditional on what it read) or, for the head and
the tree, may be undone by records still to come.

**Repairs, in order.** Each goes through the path that owns the item, so that what the
stream derives from it follows:

1. Index entries of items that are no score item of the board: their keys are removed
   (conditional on the keys read).
2. What the stream derives, rebuilt from what it derives it from, as it is now: the head
   and the period's count tree from the sort keys and versions the period's score items
   carry (``Maintenance.rebuild_rank_structures``), ``memberCount`` and the
   period's count set to the count of the items (each conditional on the value read).
3. Score items written again as the truth says (conditional on their version, with a new
   one, so a submission that read the old item retries), orphan score items deleted,
   unfinished deletes finished (``MemberService.delete_member``). The stream carries
   these to the head, the tree and the counts, from the state step 2 left: the tree's
   entries carry the versions the items had, so each rewrite is the next record.

Then the board is checked again: at once when only step 1 and 2 wrote; after step 3, once
the stream has carried it (``settle``, or the re-check is repeated until the board is
consistent or ``stream_wait_s`` has passed).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import field, replace
from typing import Any

from podium import fanout, keys, periods
from podium.boards import BoardService, to_microseconds
from podium.errors import Contended, VersionConflict, WriteRejected
from podium.inspection import BoardState, Difference, Findings, Kind, Rewrite, inspect
from podium.maintenance import Maintenance
from podium.members import MemberService
from podium.periods import ALL_TIME
from podium.ports import AuditStore, MemberStore, StructureStore, TreeStore
from podium.values import frozen

__all__ = ["Checker", "ConsistencyReport", "Difference", "Kind"]

QUIET_BOARD = "the checker expects a quiet board: writers stopped and the stream drained"
# What the stream derives, and so may still move once a repair has written items.
STREAM_DERIVED = frozenset({Kind.HEAD, Kind.TREE, Kind.MEMBER_COUNT, Kind.PERIOD_COUNT, Kind.INDEX_LAG})
STREAM_WAIT_S = 30.0  # how long a re-check waits for the stream to carry the repairs
RECHECK_INTERVAL_S = 0.5


@frozen
class ConsistencyReport:
    board_id: str
    period: str
    differences: list[Difference]  # what is still wrong
    repaired: list[Difference] = field(default_factory=list)  # found, repaired, and gone on a re-check
    notes: list[str] = field(default_factory=list)  # repairs that could not be made, and why
    counts: dict[str, int] = field(default_factory=dict)  # what the board holds

    @property
    def ok(self) -> bool:
        return not self.differences

    def to_json(self) -> dict[str, Any]:
        return {
            "boardId": self.board_id,
            "period": self.period,
            "ok": self.ok,
            "differences": [d.to_json() for d in self.differences],
            "repaired": [d.to_json() for d in self.repaired],
            "notes": list(self.notes),
            "counts": dict(self.counts),
        }


class Checker:
    def __init__(
        self,
        boards: BoardService,
        members: MemberService,
        maintenance: Maintenance,
        scores: MemberStore,
        structures: StructureStore,
        tree: TreeStore,
        audit: AuditStore,
        *,
        settle: Callable[[], None] | None = None,
        stream_wait_s: float = STREAM_WAIT_S,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.boards = boards
        self.members = members
        self.maintenance = maintenance
        self.scores = scores
        self.structures = structures
        self.tree = tree
        self.audit = audit
        self.settle = settle
        self.stream_wait_s = stream_wait_s
        self.sleep = sleep

    def check(self, board_id: str, *, period: str | None = None, repair: bool = False) -> ConsistencyReport:
        """Check the board in ``period`` (the current one by default; ``previous`` or a
        period id on a time-windowed board), and with ``repair`` put right what differs.
        NotFound when there is no such board; ValidationError or NotFound for a period a
        read could not ask for either."""
        settings = self.boards.settings(board_id)
        resolved = self.boards.period(settings, period)
        found = inspect(self._read(board_id, resolved))
        if not repair or not found.differences:
            return ConsistencyReport(board_id, resolved, found.differences, counts=found.counts)
        notes = self._repair(board_id, resolved, found)
        if found.through_stream and self.settle is not None:
            self.settle()
        after = inspect(self._read(board_id, resolved))
        if found.through_stream and self.settle is None:
            after = self._after_stream(board_id, resolved, after)
        # A difference is repaired when nothing of its kind is left about the same member
        # (or, for the board's own structures, nothing of its kind at all).
        left = {(d.kind, d.member_id) for d in after.differences}
        repaired = [d for d in found.differences if (d.kind, d.member_id) not in left]
        return ConsistencyReport(board_id, resolved, after.differences, repaired, notes, after.counts)

    # -- reading ----------------------------------------------------------------------

    def _read(self, board_id: str, period: str) -> BoardState:
        settings = self.boards.settings(board_id)
        partitions = keys.partitions(board_id, settings, period)
        items = self.audit.board_items(board_id)
        entries = [e for shard in fanout.gather(self.audit.index_entries, partitions) for e in shard]
        member_count, period_count = self.audit.stored_counts(
            board_id, None if period == ALL_TIME else period
        )
        return BoardState(
            board_id=board_id,
            settings=settings,
            period=period,
            items=items,
            entries=entries,
            member_count=member_count,
            period_count=period_count,
            head=self.structures.get_head(board_id, period, consistent=True),
            head_copies=tuple(self.structures.get_head_copies(board_id, period)),
            tree=self.tree.all_nodes(board_id, period),
        )

    def _after_stream(self, board_id: str, period: str, after: Findings) -> Findings:
        """The board once the running stream consumers have carried the repaired items to
        what they derive: checked again until that agrees, or ``stream_wait_s`` passed."""
        deadline = time.monotonic() + self.stream_wait_s
        while any(d.kind in STREAM_DERIVED for d in after.differences) and time.monotonic() < deadline:
            self.sleep(RECHECK_INTERVAL_S)
            after = inspect(self._read(board_id, period))
        return after

    # -- repairing --------------------------------------------------------------------

    def _repair(self, board_id: str, period: str, found: Findings) -> list[str]:
        """Steps 1 to 3 of the module's docstring; notes on what could not be done."""
        notes: list[str] = []
        for entry in found.strays:
            if not self.audit.drop_index_keys(entry):
                notes.append(f"item {entry.pk} / {entry.sk} changed while its index keys were removed")
        self._repair_counts(board_id, period, found, notes)
        try:
            if found.ranked is not None:
                requested = None if period == ALL_TIME else period
                self.maintenance.rebuild_rank_structures(board_id, requested, found.ranked)
        except (Contended, WriteRejected, RuntimeError) as error:  # RuntimeError: HeadCopiesBehind
            notes.append(f"the head and the count tree were not rebuilt: {error}")
        for rewrite in found.rewrites:
            if not self._rewrite(board_id, rewrite):
                notes.append(
                    f"the score item of {rewrite.score.member_id} changed while it was written again"
                )
        for orphan in found.orphans:
            if not self.audit.delete_orphan_score(
                board_id, orphan.member_id, orphan.period, orphan.state.version
            ):
                notes.append(f"the orphan score item of {orphan.member_id} changed while it was deleted")
        for member_id in found.unfinished_deletes:
            self.members.delete_member(board_id, member_id)
        if notes:
            notes.append(QUIET_BOARD)
        return notes

    def _repair_counts(self, board_id: str, period: str, found: Findings, notes: list[str]) -> None:
        if found.member_count is not None:
            seen, want = found.member_count
            if not self.audit.set_member_count(board_id, seen, want):
                notes.append("memberCount changed while it was repaired")
        if found.period_count is not None:
            seen, want = found.period_count
            settings = self.boards.settings(board_id)
            expires = periods.expires_at(settings.reset, period, settings.retain_periods)
            if not self.audit.set_period_count(board_id, period, seen, want, expires):
                notes.append(f"the count of period {period} changed while it was repaired")

    def _rewrite(self, board_id: str, rewrite: Rewrite) -> bool:
        """Write a score item again, hidden or shown as its profile says and with the index
        keys its score gives, over the version read (a new version: a submission that read
        the old one retries). False when it changed meanwhile."""
        stored = rewrite.score
        state = stored.state
        if state.hidden != rewrite.hidden:
            written = state.shown(not rewrite.hidden, to_microseconds(self.boards.clock()))
        else:
            written = replace(state, version=state.version + 1)
        settings = self.boards.settings(board_id)
        placement = keys.placement(board_id, settings, stored.member_id, written, stored.period)
        try:
            self.scores.write_score(
                board_id, stored.member_id, state.version, written, placement, stored.period
            )
        except VersionConflict:
            return False
        return True
