"""The notifier: fed by the table's change stream, it tells members what happened.

* ``overtaken``: a rival's score went from not better than a follower's score to
  strictly better. A page of follower edges finds the followers of the member that
  changed, and one batched read gets their scores and rivals lists.
* ``newLeader``: the first entry of the listing changed from one member to another. The
  board's last known leader is kept in one item. A record whose member is now better
  than that leader says by itself that the lead changed; only when the leader itself
  falls back or leaves is the index asked, with one ``Limit=1`` query per shard.

A popular member's followers are told in chunks: one invocation tells at most
``chunk_size`` followers, of all its records together. What is left of a change is a
fan-out item (``FanoutJob``) that the notifier writes to the table; its stream record
comes back to the notifier, which tells the next chunk and writes the item again, until
no follower is left. Every chunk is judged as of the change, as the record would have
been (docs/streams.md, "Popular members: the fan-out in chunks").

Each notification's id derives from the stream record that caused it, so a record (or a
chunk) delivered twice yields each notification once in the inbox. A leader change is
recorded together with the notifications it causes (compare-and-set on the leader item),
then delivered, so that neither a crash nor a concurrent consumer loses or doubles one.
Each record is judged for the leader once: its judgment leaves a mark (``LEADCHECK#``),
so a record delivered again after later ones moved the leader announces nothing new.
Delivery stores the notification in the inbox first and publishes to SNS only if it is
not yet marked published: a publish is retried, never silently dropped.

A member's profile removed (a DELETE) makes the notifier forget it (``stream.forget``): the
same kind of job, a chunk of followers at a time, begun once the member's pending fan-outs
of changes before its delete are told (they are judged by the follows it removes). A change
of a member added again under the same id, told while the job still goes on, counts no
follow begun before the delete (docs/streams.md, "A deleted member forgotten in chunks").
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from podium import fanout, keys
from podium.config import DEFAULT_FANOUT_CHUNK_SIZE
from podium.errors import AlreadyApplied, Contended
from podium.indexreads import read_keys
from podium.models import BoardSettings, LeaderState, Notification, Unknown
from podium.ports import IndexReader, MemberStore, Publisher, SocialStore
from podium.ranking import merge_shards
from podium.social import deliver as outbox_deliver
from podium.stream import forget
from podium.stream.records import (
    FORGET,
    OVERTAKEN,
    FanoutJob,
    ScoreRecord,
    derived_id,
    fanout_job,
    index_keys_only,
    member_removal,
    score_record,
)

MAX_ATTEMPTS = 16

log = logging.getLogger(__name__)

SettingsOf = Callable[[str], BoardSettings]
Leader = tuple[str, str, Decimal]  # member id, sort key, score


@dataclass
class LeaderTurn:
    """One board and period's records of a batch, judged for the leader in order: how many
    are judged for good (``done``), and the records judged since that changed nothing and
    whose marks are not yet written."""

    board_id: str
    period: str
    records: list[ScoreRecord]
    done: int = 0
    unmarked: list[str] = field(default_factory=list)


class Notifier:
    def __init__(
        self,
        social: SocialStore,
        members: MemberStore,
        index: IndexReader,
        publisher: Publisher,
        settings_of: SettingsOf,
        chunk_size: int = DEFAULT_FANOUT_CHUNK_SIZE,
    ) -> None:
        self.social = social
        self.members = members
        self.index = index
        self.publisher = publisher
        self.settings_of = settings_of
        self.chunk_size = chunk_size
        # Followers this invocation may still tell or forget (and a deleted member's
        # notifications it may still delete).
        self.budget = chunk_size

    def begin(self) -> None:
        """A new invocation (a batch of records): it does at most one chunk of followers."""
        self.budget = self.chunk_size

    def apply(self, raw: dict[str, Any]) -> None:
        """Everything one record tells: its leader judgment and the rest (``tell``). The
        stream's batches judge their leaders together (``check_leaders``), then ``tell``."""
        self.tell(raw)
        record = self._ranked(raw)
        if record is not None:
            self.check_leader(record, self.settings_of(record.board_id))

    def tell(self, raw: dict[str, Any]) -> None:
        """What one record tells but the leader: overtaken followers, the next chunk of a
        job, a deleted member forgotten."""
        removal = member_removal(raw)
        if removal is not None:
            self.start_forget(FanoutJob.forgetting(removal))
            return
        job = fanout_job(raw)
        if job is not None:
            self.continue_job(job)
            return
        record = self._ranked(raw)
        if record is None:
            return
        # A hidden member overtaking someone tells no one.
        if record.new is not None and record.changed and not record.hidden:
            self.start_fanout(FanoutJob.of(record), self.settings_of(record.board_id))

    @staticmethod
    def _ranked(raw: dict[str, Any]) -> ScoreRecord | None:
        """The record as a change of a ranking (None: it changes none; a re-shard's update
        of an item's keys in the other index changes none either)."""
        if member_removal(raw) is not None or fanout_job(raw) is not None or index_keys_only(raw):
            return None
        return score_record(raw)

    # -- overtaken, a chunk of followers at a time --------------------------------------

    def start_fanout(self, job: FanoutJob, settings: BoardSettings) -> None:
        """Tell the first followers of a change, as many as the invocation may still tell;
        if more may follow, write the fan-out item whose stream record goes on. The item is
        written after the chunk is told, and only if absent: a redelivered change finds it
        and leaves the rest to it."""
        if self.budget > 0:
            cursor, more = self._tell_chunk(job, settings, self.budget)
        else:  # this invocation has told its chunk: only see whether anyone follows
            cursor, more = None, bool(self.social.followers_page(job.board_id, job.member_id, 1, None)[0])
        if more and self.social.start_fanout(job.board_id, job.member_id, job.job_id, job.body(), cursor):
            log.info("%s's change on %s goes on in chunks, after %s", job.member_id, job.board_id, cursor)

    def continue_job(self, job: FanoutJob) -> None:
        """Do the next chunk of a pending job (tell its followers, or forget) and move its
        item on (or end it). An invocation that has done its chunk writes the item again
        unchanged instead, so that its record comes back to a later one."""
        cursor, more = job.cursor, True
        if self.budget > 0 and job.kind == FORGET:
            cursor, more = self._forget_chunk(job)
        elif self.budget > 0:
            cursor, more = self._tell_chunk(job, self.settings_of(job.board_id), self.budget)
        moved = self.social.advance_fanout(
            job.board_id, job.member_id, job.job_id, job.step, cursor, done=not more
        )
        if not moved:  # a redelivery: the chunk was done and the item moved on before
            log.info("the %s job %s of %s was past step %d", job.kind, job.event_id, job.member_id, job.step)

    def _pending(self, board_id: str, member_id: str, forgets_only: bool = False) -> list[FanoutJob]:
        stored = self.social.pending_fanouts(board_id, member_id, forgets_only)
        return [FanoutJob.stored(board_id, member_id, *job) for job in stored]

    # -- forgetting a deleted member, a chunk at a time ----------------------------------

    def start_forget(self, job: FanoutJob) -> None:
        """Forget what the invocation may of a deleted member, on its profile's removal; if
        anything may be left, write the job item (only if absent) whose stream record goes
        on, as a fan-out's does. A redelivered removal does a chunk again (from the first
        edge left; every change it makes is conditional) and leaves the rest to the item."""
        cursor, more = self._forget_chunk(job) if self.budget > 0 else (None, True)
        if more and self.social.start_fanout(job.board_id, job.member_id, job.job_id, job.body(), cursor):
            log.info("forgetting %s on %s goes on in chunks, after %s", job.member_id, job.board_id, cursor)

    def _forget_chunk(self, job: FanoutJob) -> tuple[str | None, bool]:
        """As much of the forgetting as the invocation's chunk allows: the rest of the
        member's fan-outs of changes before its delete first (they are judged by the follows
        forgetting removes), then its followers after the cursor, then its inbox. The cursor
        after it, and whether anything may be left.

        Only a job not yet begun on the followers (no cursor) looks for fan-outs: every one of
        the deleted member's changes was read before its removal, so their items exist before
        the job does, and the job begins on the followers only once none is pending."""
        if job.cursor is None and not self._tell_fanouts_before(job):
            return None, True
        if self.budget <= 0:
            return job.cursor, True
        cursor, more, read = forget.forget_followers(self.social, job, self.budget)
        self.budget -= read
        if more or self.budget <= 0:  # the followers first; the inbox in a later chunk
            return cursor, True
        cleared, more = forget.clear_inbox(self.social, job, self.budget)
        self.budget -= cleared
        return cursor, more

    def _tell_fanouts_before(self, forgetting: FanoutJob) -> bool:
        """Tell, as far as the invocation's chunk goes, the rest of the deleted member's
        fan-outs of changes made before its delete, each chunk's progress written (so that a
        retry, or the fan-out's own record, goes on from there); True when none is left."""
        settings = self.settings_of(forgetting.board_id)
        for job in self._pending(forgetting.board_id, forgetting.member_id):
            if job.kind != OVERTAKEN or job.changed_us > forgetting.changed_us:
                continue  # another forgetting, or a change of the member added again
            if self.budget <= 0:
                return False
            cursor, more = self._tell_chunk(job, settings, self.budget)
            moved = self.social.advance_fanout(
                job.board_id, job.member_id, job.job_id, job.step, cursor, done=not more
            )
            if more or not moved:  # more to tell, or its own record moved it meanwhile
                return False
        return True

    def _tell_chunk(self, job: FanoutJob, settings: BoardSettings, limit: int) -> tuple[str | None, bool]:
        """Tell the overtaken among up to ``limit`` followers after the job's cursor (their
        deliveries at once, on the shared pool); the last follower read and whether more may
        follow."""
        followers, more = self.social.followers_page(job.board_id, job.member_id, limit, job.cursor)
        self.budget -= len(followers)
        notifications = self.overtaken(job, settings, [f for f in followers if f != job.member_id])
        fanout.gather(self.deliver, notifications)
        return (followers[-1] if followers else job.cursor), more

    def overtaken(self, job: FanoutJob, settings: BoardSettings, followers: list[str]) -> list[Notification]:
        """Which of ``followers`` the change passed, judged as of the change, however late
        it is read: who followed the member then (``Rivals``), and each one's score then
        (the score item's history). A follower whose score changed more often since than its
        history keeps is not told (logged): better silent than wrong."""
        if not followers:
            return []
        moment, new = job.changed_us, job.new
        assert new is not None  # an overtaken job's change always has a new score
        found: list[tuple[int, Notification]] = []
        states = self.social.follower_states(job.board_id, followers, job.period)
        for follower, (state, rivals) in states.items():
            began = rivals.follow_began(job.member_id, moment)
            if state is None or state.hidden or began is None:
                continue  # gone, hidden, or not following the member when it changed
            score = state.score_at(moment)
            if score is None:
                continue  # no score yet when the member changed
            if isinstance(score, Unknown):
                log.warning(
                    "cannot tell %s's score when %s changed on %s: its history is too short",
                    follower,
                    job.member_id,
                    job.board_id,
                )
                continue
            was_better = job.old is not None and settings.is_better(job.old, score)
            if not was_better and settings.is_better(new, score):
                told = _notification(
                    job, "overtaken", to=follower, score=score, by=job.member_id, by_score=new
                )
                found.append((began, told))
        if not found:
            return []
        # A follow begun before the member's latest delete was a follow of the member deleted,
        # which a pending forgetting has not yet reached: it does not count.
        deleted = self._deleted_before(job)
        return [told for began, told in found if began >= deleted]

    def _deleted_before(self, job: FanoutJob) -> int:
        """When the member was last deleted before the change, if forgetting that member
        still goes on (0 if not): one query of its pending forgettings, asked only when the
        change tells someone."""
        moments = [f.changed_us for f in self._pending(job.board_id, job.member_id, forgets_only=True)]
        return max((at for at in moments if at < job.changed_us), default=0)

    # -- newLeader --------------------------------------------------------------------

    def check_leaders(self, raws: list[dict[str, Any]]) -> set[str]:
        """Judge a batch's score records for the leader, each board and period's in the
        stream's order, from one read of its leader item (``check_leader`` reads it for every
        record); the eventIDs of the records not judged (they are retried from the first).

        The marks of the records that change nothing are written together (a BatchWriteItem
        of 25), and always before the leader item is written for a later record of the
        batch: a record delivered again after a later one moved the leader must find its
        mark (``check_leader``). A mark not yet written when the invocation dies is the
        judgment of a record that changed nothing, and nothing changed after it either: its
        record is judged again as it was."""
        groups: dict[tuple[str, str], list[ScoreRecord]] = {}
        for raw in raws:
            record = self._ranked(raw)
            if record is not None:
                groups.setdefault((record.board_id, record.period), []).append(record)
        failed: set[str] = set()
        for (board_id, period), records in groups.items():
            turn = LeaderTurn(board_id, period, records)
            try:
                self._judge_in_turn(turn, self.settings_of(board_id))
            except Exception:
                log.exception("the leader of %s (%s) could not be judged", board_id, period)
                failed.update(record.event_id for record in records[turn.done :])
        return failed

    def _judge_in_turn(self, turn: LeaderTurn, settings: BoardSettings) -> None:
        """Judge the turn's records in order: the marks of those that change nothing wait
        until a later one writes the leader, or the end."""
        known = self.social.get_leader(turn.board_id, turn.period)
        position, attempts = 0, 0
        while position < len(turn.records):
            record = turn.records[position]
            if known is not None and known.pending:
                self._mark_judged(turn, position)
                self._deliver_pending(record, known.pending, known.version)
                known = self.social.get_leader(turn.board_id, turn.period)
                continue
            decision = self._next_leader(record, known, settings)
            if decision is None:
                turn.unmarked.append(record.event_id)
                position += 1
                continue
            self._mark_judged(turn, position)
            leader, pending = decision
            version = known.version if known else None
            try:
                swapped = self.social.swap_leader(
                    turn.board_id, turn.period, version, leader, pending, record.event_id
                )
            except AlreadyApplied:
                log.info("the leader check of %s was done before", record.event_id)
                position = turn.done = position + 1
                continue
            if not swapped:  # another shard's records moved the leader: judge it again
                attempts += 1
                if attempts >= MAX_ATTEMPTS:
                    raise Contended(f"the leader of {turn.board_id} kept changing under the notifier")
                known = self.social.get_leader(turn.board_id, turn.period)
                continue
            if pending:
                self._deliver_pending(record, pending, (version or 0) + 1)
            position = turn.done = position + 1
            known = self.social.get_leader(turn.board_id, turn.period)
        self._mark_judged(turn, position)

    def _mark_judged(self, turn: LeaderTurn, position: int) -> None:
        """Write the marks of the records judged so far that changed nothing: the records
        before ``position`` are then judged for good."""
        if turn.unmarked:
            self.social.mark_leaders_judged(turn.unmarked)
            turn.unmarked.clear()
        turn.done = position

    def check_leader(self, record: ScoreRecord, settings: BoardSettings) -> None:
        """Judge whether the record changed the board's leader, once per record.

        A record delivered again may come after later records of its batch moved the leader
        (a member that led fell back or was hidden): judged again against that leader, it
        would announce a lead that was told, or not, the first time. So each judgment is
        remembered by a mark of its record, written with the leader it changes (one
        transaction) or after a judgment that changes nothing, and a record whose mark
        exists changes nothing. A record that was never judged still is, however late it
        comes (another shard's, or one whose member has moved on since)."""
        self._judge_in_turn(LeaderTurn(record.board_id, record.period, [record]), settings)

    def _next_leader(
        self, record: ScoreRecord, known: LeaderState | None, settings: BoardSettings
    ) -> tuple[Leader | None, list[Notification]] | None:
        """The leader after this record, and who to tell; None when nothing changes.

        The record itself says whether its member took the lead (its new sort key is
        below the leader's), so that changes are seen in the order they were written even
        when the notifier runs behind. Only when the leader itself falls back or leaves is
        the index asked who leads now: one ``Limit=1`` query per shard.
        """
        member, key = record.member_id, record.new_sort_key
        mine = (member, key, record.new) if key is not None and record.new is not None else None
        # No leader item yet: a board's first period has one from its creation, a later
        # period of a time-windowed board none until its first record. Start from the
        # index as it is, announcing nothing.
        if known is None:
            return self._current_leader(record.board_id, record.period, settings), []
        if known.member_id is None or known.sort_key is None:
            return (mine, []) if mine else None  # the first leader is not announced
        if member != known.member_id:
            if mine is not None and mine[1] < known.sort_key:
                return mine, self._leader_notifications(record, mine, known.member_id, known.score)
            return None
        if mine is not None and mine[1] <= known.sort_key:
            return (mine, []) if mine[1] != known.sort_key else None
        top = self._current_leader(record.board_id, record.period, settings)
        if top is None:
            return None, []
        if top[0] == member:
            return (top, []) if top[1] != known.sort_key else None
        return top, self._leader_notifications(record, top, member, known.score)

    def _current_leader(self, board_id: str, period: str, settings: BoardSettings) -> Leader | None:
        partitions = keys.partitions(board_id, settings, period)
        firsts = fanout.gather(lambda p: read_keys(self.index, p, None, None, 1), partitions)
        top = merge_shards(firsts, 1)
        if not top:
            return None
        score, member_id = keys.order_of(settings).parse(top[0])
        return member_id, top[0], score

    def _leader_notifications(
        self, record: ScoreRecord, leader: Leader, previous: str, previous_score: Decimal | None
    ) -> list[Notification]:
        new_id, _, new_score = leader
        still_there = self.members.get_score(record.board_id, previous, record.period)
        if still_there is not None and still_there.hidden:
            still_there = None  # a leader that was hidden is out of the rankings: told nothing
        # The previous leader's score when the lead changed: None if it is gone (or was
        # since deleted and added again); its score now if its history does not reach back.
        held = still_there.score_at(record.changed_us) if still_there else None
        if isinstance(held, Unknown):
            held = still_there.score if still_there else None
        by_score = held if held is not None else (previous_score or Decimal(0))
        notifications = [
            _notification(record, "newLeader", to=new_id, score=new_score, by=previous, by_score=by_score)
        ]
        if held is not None:  # a deleted leader is told nothing
            notifications.append(
                _notification(record, "newLeader", to=previous, score=held, by=new_id, by_score=new_score)
            )
        return notifications

    def _deliver_pending(self, record: ScoreRecord, pending: list[Notification], version: int) -> None:
        for notification in pending:
            self.deliver(notification)
        self.social.clear_leader_pending(record.board_id, record.period, version)

    # -- delivery ---------------------------------------------------------------------

    def deliver(self, notification: Notification) -> None:
        outbox_deliver(self.social, self.publisher, notification)


def _notification(
    record: ScoreRecord | FanoutJob, kind: str, *, to: str, score: Decimal, by: str, by_score: Decimal
) -> Notification:
    """What ``record`` tells member ``to`` (score ``score``) about member ``by`` (score
    ``by_score``). The id derives from the record, the kind and the recipient, so a record
    delivered twice yields the same notification."""
    return Notification(
        notification_id=derived_id(record.event_id, kind, to),
        type=kind,
        board_id=record.board_id,
        member_id=to,
        by_member_id=by,
        score=score,
        by_score=by_score,
        created_us=record.changed_us,
    )
