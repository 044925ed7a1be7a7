"""Members: adding one or replacing its data, reading it (fresh too, with the events not
yet folded), deleting it, submitting a score under the board's operator, and logging the
events of a hot counter."""

from __future__ import annotations

import logging
import math
from dataclasses import replace
from datetime import UTC
from decimal import Decimal

from podium import idempotency, keys, numbers, periods, retry, validation
from podium.boards import BoardService, to_microseconds
from podium.errors import (
    AlreadyApplied,
    Conflict,
    HiddenChanged,
    ItemMissing,
    NotFound,
    RateLimited,
    Throttled,
    ValidationError,
    VersionConflict,
    WriteUnconfirmed,
)
from podium.idempotency import SubmissionKey
from podium.models import BoardSettings, Limits, Member, ScoreChange, ScoreState
from podium.ports import EventStore, MemberStore, SocialStore
from podium.validation import EventRequest, MemberRequest

log = logging.getLogger(__name__)

SECONDS_PER_MINUTE = 60


def apply_operator(settings: BoardSettings, old: Decimal | None, value: Decimal) -> Decimal:
    """The score after a submission; ``old`` is None for the first one of a period."""
    if settings.operator == "increment":
        return numbers.add(old if old is not None else Decimal(0), value)
    if settings.operator == "best" and old is not None:
        return value if settings.is_better(value, old) else old
    return value


def next_state(state: ScoreState | None, score: Decimal, reached_at_us: int, hidden: bool) -> ScoreState:
    """The score item's state after a write of ``score``, for a member hidden or not."""
    if state is None:
        return ScoreState.first(score, reached_at_us, hidden)
    written = state.then(score, reached_at_us)
    return written if state.hidden == hidden else written.shown(not hidden, reached_at_us)


def readable_periods(settings: BoardSettings, current: str) -> tuple[str, str]:
    """The first and last period a read can ask for (``periods.resolve``): a hide or an
    unhide touches the member's score items of these only, at most retainPeriods + 1."""
    if settings.reset == "never":
        return current, current
    return periods.shift(settings.reset, current, -settings.retain_periods), current


def contended(member_id: str) -> Throttled:
    return retry.contended(f"member {member_id}")


def missing(member_id: str, board_id: str) -> NotFound:
    return NotFound(f"member {member_id} does not exist on board {board_id}; add it with PUT first")


class MemberService:
    def __init__(
        self, boards: BoardService, members: MemberStore, eventlog: EventStore, social: SocialStore
    ) -> None:
        self.boards = boards
        self.members = members
        self.eventlog = eventlog
        self.social = social

    def put_member(self, board_id: str, member_id: str, request: MemberRequest) -> tuple[Member, bool]:
        """Add the member or replace its data; a score given goes to the current period
        (on a board that never resets, a new member starts at 0). ``hidden`` given hides
        or shows the member in every readable period (``show``)."""
        settings = self.boards.settings(board_id)
        windowed = settings.reset != "never"
        for _ in retry.attempts():
            now = self.boards.clock()
            period = periods.period_of(settings.reset, now)
            profile, state = self.members.get_member(board_id, member_id, period)
            reached = to_microseconds(now)
            if profile is None:
                hidden = bool(request.hidden)
                score = request.score if request.score is not None or windowed else Decimal(0)
                data = request.data if request.data is not None else {}
                new = None
                if score is not None:
                    first = ScoreState.first(score, reached, hidden)
                    new = (first, keys.placement(board_id, settings, member_id, first, period))
                if self.members.create_member(board_id, member_id, data, new, period, now, hidden=hidden):
                    return Member(board_id, member_id, score, data, now, now, hidden), True
                continue
            was = bool(profile["hidden"])
            hidden = was if request.hidden is None else request.hidden
            change = None
            score = state.score if state else None
            if request.score is not None and request.score != score:
                score = request.score
                written = next_state(state, score, reached, hidden)
                placement = keys.placement(board_id, settings, member_id, written, period)
                change = (state.version if state else None, written, placement)
            try:
                # On the condition that the profile is still hidden as read: the score
                # written was placed (or not) by it.
                self.members.update_member(
                    board_id, member_id, request.data, change, period, now, was, request.hidden
                )
            except (VersionConflict, ItemMissing):
                continue
            if request.hidden is not None:
                # Also when nothing changed: a PUT repeated finishes one that failed half-way.
                self.show(board_id, member_id, visible=not request.hidden)
            data = request.data if request.data is not None else profile["data"]
            return Member(board_id, member_id, score, data, profile["createdAt"], now, hidden), False
        raise contended(member_id)

    def show(self, board_id: str, member_id: str, *, visible: bool) -> None:
        """Give the member's score item of every readable period the index keys (shown)
        or take them away (hidden), as its profile (already written) says. The stream sees
        each as the member arriving at its score or leaving, in every structure it keeps.

        A first score of a period written meanwhile learns the flag from the profile
        (``MemberStore.write_score``); a hide and an unhide racing each other are settled
        by reading the profile again after the items: whoever wrote it last, the items end
        as it says."""
        settings = self.boards.settings(board_id)
        for _ in retry.attempts():
            current = periods.period_of(settings.reset, self.boards.clock())
            first, last = readable_periods(settings, current)
            for period, state in self.members.scores_between(board_id, member_id, first, last).items():
                self._show_score(board_id, settings, member_id, period, state, visible)
            hidden = self.members.hidden(board_id, member_id)
            if hidden is None or hidden != visible:
                return  # deleted meanwhile, or the items are as the profile says
            visible = not hidden
        raise contended(member_id)

    def _show_score(
        self,
        board_id: str,
        settings: BoardSettings,
        member_id: str,
        period: str,
        state: ScoreState | None,
        visible: bool,
    ) -> None:
        for _ in retry.attempts():
            if state is None or state.hidden != visible:
                return  # gone, or already as wanted
            # A new version, so that a submission that read the item before fails its
            # condition and places its score by the new flag.
            written = state.shown(visible, to_microseconds(self.boards.clock()))
            placement = keys.placement(board_id, settings, member_id, written, period)
            try:
                self.members.write_score(board_id, member_id, state.version, written, placement, period)
                return
            except VersionConflict:
                state = self.members.get_score(board_id, member_id, period)
        raise contended(member_id)

    def get_member(self, board_id: str, member_id: str, requested_period: str | None = None) -> Member:
        settings = self.boards.settings(board_id)
        period = self.boards.period(settings, requested_period)
        profile, state = self.members.get_member(board_id, member_id, period)
        if profile is None:
            raise NotFound(f"member {member_id} does not exist on board {board_id}")
        return Member(
            board_id,
            member_id,
            state.score if state else None,
            profile["data"],
            profile["createdAt"],
            profile["updatedAt"],
            bool(profile["hidden"]),
        )

    def delete_member(self, board_id: str, member_id: str) -> None:
        """The member leaves every ranking and is forgotten (docs/data-model.md, "Deleting a
        member"). In the request, the bounded part: the tombstone that stops every write
        from creating its items again, the edges of its own rivals list (at most 100, and
        the follows it ended lately), then its own partition, profile last. Its inbox and
        its place in its followers' lists, which have no bound, the notifier forgets on the
        profile's REMOVE. A member not there (no profile, not even a tombstone left by a
        delete that failed half-way) is deleted already: one failed conditional update."""
        self.boards.settings(board_id)
        gone = self.members.fence(board_id, member_id, to_microseconds(self.boards.clock()))
        if gone is None:
            return
        self.boards.boards.remember_deleted(board_id, member_id, gone)  # no rollup brings it back
        # The edges before the list that names them: a delete that fails half-way finds the
        # list again on its retry.
        follows = self.social.get_rivals(board_id, member_id)
        if follows is not None:
            self.social.drop_follows(board_id, member_id, follows)
        self.members.delete_member(board_id, member_id, gone)

    def submit_score(
        self,
        board_id: str,
        member_id: str,
        value: Decimal,
        limits: Limits | None = None,
        key: SubmissionKey | None = None,
    ) -> ScoreChange:
        """Apply the board's operator atomically: read, compute, write if unchanged since.
        On a time-windowed board the first submission of a period starts its score. The
        board's ``limits`` bound the value and how often the member may submit. With an
        Idempotency-Key (``key``), a submission applied before is answered as then, and
        not applied nor counted again."""
        settings = self.boards.settings(board_id)
        if key is not None:
            found = self.members.recorded_submission(board_id, member_id, key)
            if found is not None:
                return idempotency.replay(key, found)
        limits = limits or Limits()
        validation.within_limits(value, limits)
        minute = self._count_submissions(board_id, member_id, limits)
        try:
            change, replayed = self._submit(board_id, member_id, value, settings, key)
        except Exception:
            if minute is not None:  # refused after all: the submission does not count
                self.members.uncount_submission(board_id, member_id, minute, 1)
            raise
        if replayed and minute is not None:  # a duplicate that another request applied
            self.members.uncount_submission(board_id, member_id, minute, 1)
        return change

    def _count_submissions(
        self, board_id: str, member_id: str, limits: Limits, count: int = 1, what: str = "a score submission"
    ) -> str | None:
        """Count ``count`` submissions (``what``) in their clock minute (UTC) when the board
        limits how many a member may make, all or none, in one conditional update; 429 when
        they would pass the limit. The minute counted, or None."""
        most = limits.max_submissions_per_minute
        if most is None:
            return None
        now = self.boards.clock().astimezone(UTC)
        minute_start = now.replace(second=0, microsecond=0)
        minute = minute_start.strftime("%Y-%m-%dT%H:%M")
        expires = int(minute_start.timestamp()) + 2 * SECONDS_PER_MINUTE
        if count <= most and self.members.count_submission(board_id, member_id, minute, most, expires, count):
            return minute
        wait = max(1, math.ceil(SECONDS_PER_MINUTE - (now - minute_start).total_seconds()))
        raise RateLimited(
            f"member {member_id} may make {most} submissions a minute on board {board_id} (the "
            f"board's limits.maxSubmissionsPerMinute), and {what} would pass that; "
            + (f"retry in {wait} s" if count <= most else f"send at most {most} at a time"),
            retry_after=wait,
        )

    def _submit(
        self,
        board_id: str,
        member_id: str,
        value: Decimal,
        settings: BoardSettings,
        key: SubmissionKey | None,
    ) -> tuple[ScoreChange, bool]:
        """The change, and whether it is the recorded answer of ``key`` (applied before)."""
        # Whether a first score of the period is written hidden: assumed not (no read),
        # and learnt from the profile in the rare case it is.
        first_hidden = False
        for _ in retry.attempts():
            now = self.boards.clock()
            period = periods.period_of(settings.reset, now)
            state = self.members.get_score(board_id, member_id, period)
            if state is None and settings.reset == "never":
                raise missing(member_id, board_id)
            old = state.score if state else None
            new_score = apply_operator(settings, old, value)
            try:
                new_score = numbers.check_score(new_score, "score")
            except ValidationError as error:
                raise ValidationError(f"value would take the score out of bounds: {error.message}") from error
            if state is not None and new_score == state.score:
                change = ScoreChange(member_id, state.score, state.score)
                if key is None or self.members.record_submission(board_id, member_id, key, change):
                    return change, False
                return self._recorded(board_id, member_id, key), True
            change = ScoreChange(member_id, new_score, old)
            hidden = state.hidden if state else first_hidden
            written = next_state(state, new_score, to_microseconds(now), hidden)
            placement = keys.placement(board_id, settings, member_id, written, period)
            answer = (key, change) if key is not None else None
            try:
                self.members.write_score(
                    board_id,
                    member_id,
                    state.version if state else None,
                    written,
                    placement,
                    period,
                    answer=answer,
                )
            except AlreadyApplied:
                assert key is not None  # only a key's record makes a submission's write AlreadyApplied
                return self._recorded(board_id, member_id, key), True
            except ItemMissing as error:
                raise missing(member_id, board_id) from error
            except HiddenChanged as changed:
                first_hidden = changed.hidden
                continue
            except VersionConflict:
                continue
            return change, False
        raise contended(member_id)

    def _recorded(self, board_id: str, member_id: str, key: SubmissionKey) -> ScoreChange:
        """The answer recorded for ``key`` by the request that applied it."""
        found = self.members.recorded_submission(board_id, member_id, key)
        if found is None:  # it expired in between
            raise Conflict("a request with this Idempotency-Key was just applied; retry shortly")
        return idempotency.replay(key, found)

    # -- hot counters: the event log --------------------------------------------------

    def log_events(
        self,
        board_id: str,
        requests: list[EventRequest],
        limits: Limits | None = None,
        counted_for: str | None = None,
    ) -> int:
        """Insert the events, a page per member, all or none (no read); claim their ids and
        settle the pages; the fold counts them within seconds. An event whose value lies
        outside the board's ``limits`` refuses the whole batch, and so does a batch that
        would take ``counted_for`` (a player posting its own events; None for an admin's)
        past its submissions a minute: each event counts one, in one conditional update."""
        from podium import events  # only this route and fresh_member need the event log

        settings = self.boards.settings(board_id)
        limits = limits or Limits()
        for index, request in enumerate(requests):
            validation.within_limits(request.value, limits, f"events[{index}].value")
        now = self.boards.clock()
        pages = events.to_pages(board_id, settings, requests, now)
        expires = int(now.timestamp()) + events.LOG_TTL_SECONDS
        counted = None
        if counted_for is not None:
            what = f"these {len(requests)} events" if len(requests) > 1 else "this event"
            minute = self._count_submissions(board_id, counted_for, limits, len(requests), what)
            counted = (counted_for, minute) if minute is not None else None
        try:
            logged_claimed = events.log(self.eventlog, pages, now, expires)
        except WriteUnconfirmed:
            raise  # perhaps logged after all: they stay counted
        except Exception:
            if counted is not None:  # nothing logged: the events do not count
                self.members.uncount_submission(board_id, *counted, len(requests))
            raise
        if logged_claimed:
            return len(requests)
        # Logged: the fold counts them, whatever happens next. Claiming the ids now lets a
        # fresh read count them before the fold does (docs/event-log.md).
        claiming = [page for page in pages if not page.claimed]
        if claiming:
            try:
                self.eventlog.settle_pages(events.claim(self.eventlog, claiming, now), expires)
            except Exception:  # the fold claims them instead; until then fresh reads miss them
                log.warning(
                    "claiming the ids of %d page(s) on %s failed", len(claiming), board_id, exc_info=True
                )
        return len(requests)

    def fresh_member(
        self, board_id: str, member_id: str, requested_period: str | None = None
    ) -> tuple[Member, int]:
        """The member with its score as of now: the last fold plus the events logged since,
        and how many of its distinct events are not folded yet."""
        from podium import events

        member = self.get_member(board_id, member_id, requested_period)
        period = self.boards.period(self.boards.settings(board_id), requested_period)
        state, pending_sum, pending = events.fresh_score(
            self.members, self.eventlog, board_id, member_id, period
        )
        base = state.score if state else None
        score = numbers.add(base or Decimal(0), pending_sum) if (base is not None or pending) else None
        fresh = replace(member, score=score)
        return fresh, pending
