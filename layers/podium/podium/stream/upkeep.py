"""Rank upkeep: keeping each board's head and count tree from the change stream (the
aggregator calls this), and rebuilding them from the index (maintenance, the consistency
checker's repairs, and the benchmark's bulk loads).

See ``podium.head`` and ``podium.counttree`` for what they hold and why the counts stay
exact; docs/count-tree.md for what each costs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime

from podium import fanout, keys, periods, telemetry, treebuild
from podium import head as heads
from podium.counttree import BELOW_EVERY_KEY, Change, Entry, Version
from podium.errors import Contended
from podium.keys import member_of_key
from podium.models import BoardSettings
from podium.periods import ALL_TIME
from podium.ports import IndexReader, MemberStore, StructureStore, TreeStore
from podium.stream.records import ScoreRecord
from podium.treekeeper import Newest, Tree, TreeKeeper

SettingsOf = Callable[[str], BoardSettings]
Clock = Callable[[], datetime]

MAX_ATTEMPTS = 32

log = logging.getLogger(__name__)


class RankUpkeep:
    def __init__(
        self,
        structures: StructureStore,
        index: IndexReader,
        tree: TreeStore,
        members: MemberStore,
        settings_of: SettingsOf,
        clock: Clock,
    ) -> None:
        self.structures = structures
        self.index = index
        self.tree = tree
        self.members = members
        self.settings_of = settings_of
        self.clock = clock  # the consumer's: a tombstone's time, to drop it a day later
        # One keeper for the process (a function instance): it remembers the shapes seen.
        self.keeper = TreeKeeper(tree, gather=fanout.gather_writes)

    # -- shared -----------------------------------------------------------------------

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
        from podium.indexreads import top_keys  # rare: kept off the cold start

        found, _ = top_keys(self.index, self._partitions(board_id, period), None, want)
        return found

    def index_range(self, board_id: str, period: str, lo: str, hi: str | None) -> list[str]:
        """Every key of the board's index in ``[lo, hi]``, in listing order."""
        from podium.ranking import merge_shards  # rare: kept off the cold start

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
            if stored is not None and stored.copies_owed:
                # A write of the copies failed after this version (the batch is delivered
                # again): they are written first, whether this batch changes the head or not.
                self.structures.heal_copies(board_id, period, stored, self._expires(board_id, period))
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
                self._note_lag(changes)
                return
        raise Contended(f"the head of {board_id} is contended: retrying the batch")

    def _note_lag(self, changes: Sequence[ScoreRecord]) -> None:
        """How long the head showed the board without the oldest of the changes it took."""
        oldest = min(change.changed_us for change in changes)
        telemetry.note_head_lag(self.clock() - datetime.fromtimestamp(oldest / 1_000_000, UTC))

    def refilled(self, board_id: str, period: str, version: int) -> heads.Head:
        found = self.index_head(board_id, period, heads.LADDER_REACH)
        return heads.from_index(found, member_of_key, version)

    # -- the count tree: leaves per record, reports per batch -------------------------------

    def keep_trees(self, records: Sequence[ScoreRecord]) -> set[str]:
        """Apply a batch of records from the stream to the count trees of their boards and
        periods: each record to its leaves in the stream's order, then the counts reported
        once per tree and node (``TreeKeeper.apply_batch``); the eventIDs of the records
        that failed (they are retried)."""
        groups: dict[tuple[str, str], list[ScoreRecord]] = {}
        for record in records:
            groups.setdefault((record.board_id, record.period), []).append(record)
        failed: set[str] = set()
        for (board_id, period), changes in groups.items():
            tree = Tree(board_id, period, self._expires(board_id, period))
            now = int(self.clock().timestamp())
            positions = self.keeper.apply_batch(tree, [self._change(change, now) for change in changes])
            failed.update(changes[position].event_id for position in positions)
        return failed

    @staticmethod
    def _change(record: ScoreRecord, now: int) -> Change:
        return Change(record.member_id, record.old_sort_key, record.new_sort_key, record.version, now)

    def keep_tree(self, record: ScoreRecord, *, replayed: bool = False) -> None:
        """Apply the record to the board's count tree of its period: every record of a
        ranked member, also one that keeps its sort key (it moves the entry's version on,
        which the member's next record expects). A hidden member's records carry no keys
        and change nothing: a hide is a removal, an unhide an arrival.

        A ``replayed`` record (the redrive's, out of the stream's order) is checked against
        its member's score item, read strongly consistent, so that it cannot count the
        member twice (``TreeKeeper.apply``, docs/count-tree.md "Replays")."""
        board_id, period = record.board_id, record.period
        change = self._change(record, int(self.clock().timestamp()))
        tree = Tree(board_id, period, self._expires(board_id, period))
        self.keeper.apply(tree, change, self._newest(record) if replayed else None)

    def _newest(self, record: ScoreRecord) -> Newest:
        """The member's score item's version now (None: it is gone)."""

        def read() -> Version | None:
            found = self.members.versions(record.board_id, [record.member_id], record.period, consistent=True)
            return found[record.member_id][1] if record.member_id in found else None

        return read

    # -- maintenance ------------------------------------------------------------------

    def rebuild(
        self, board_id: str, period: str = ALL_TIME, ranked: Mapping[str, Entry] | None = None
    ) -> int:
        """Rebuild a board's head and count tree of ``period`` from the index (a board
        loaded in bulk), or from ``ranked`` (the consistency checker's: member -> its key
        and version, from the score items). The tree's old items are deleted first: a build
        does not write every node of an older shape. Returns the number of the tree's
        nodes.

        It expects no writer meanwhile: a record applied to the old tree while it is
        replaced is lost (the checker, ``make verify``, finds that)."""
        entries = dict(ranked) if ranked is not None else self.indexed_entries(board_id, period)
        expires = self._expires(board_id, period)
        # State versions from the build's time (µs): above any the old tree reached (a node
        # takes far fewer writes than microseconds pass), so no old report is taken.
        nodes = treebuild.build(entries, sv=int(self.clock().timestamp() * 1_000_000))
        self.tree.drop(board_id, period)
        self.tree.put_nodes(board_id, period, nodes, expires)
        self.keeper.shape(Tree(board_id, period)).forget()
        found = sorted(entry.key for entry in entries.values())
        current = self.structures.get_head(board_id, period, consistent=True)
        head = heads.from_index(
            found[: heads.LADDER_REACH + 1], member_of_key, current.version if current else 0
        )
        if not self.structures.put_head(board_id, period, heads.to_item(head), expires):
            raise Contended(f"the head of {board_id} changed during the rebuild")
        return len(nodes)

    def indexed_entries(self, board_id: str, period: str) -> dict[str, Entry]:
        """The tree's entries of the members the index lists, each with the key and the
        version its score item holds now (BatchGetItem, 100 items a request, eventually
        consistent: 0.5 RCU a member), so that each member's next record finds the entry
        its predecessor left. A member hidden or gone since the index was read is left
        out; one that joined since is brought by its record."""
        listed = self.index_range(board_id, period, BELOW_EVERY_KEY, None)
        found = self.members.versions(board_id, [member_of_key(k) for k in listed], period, consistent=False)
        return {member: Entry(key, version) for member, (key, version) in found.items() if key is not None}
