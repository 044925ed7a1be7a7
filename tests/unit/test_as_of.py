"""What was true at a given moment: a score item's history and a rivals list's follows,
against a plain log of every change kept in full."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given
from hypothesis import strategies as st

from podium.models import HISTORY_CHARS, UNKNOWN, Rivals, ScoreState, decode_history


@given(
    st.lists(
        st.decimals(min_value=-(10**6), max_value=10**6, places=3, allow_nan=False), min_size=1, max_size=40
    ),
    st.lists(st.integers(0, 5_000), min_size=1, max_size=40),
)
def test_score_at_answers_the_score_held_then_or_says_it_cannot(
    scores: list[Decimal], gaps: list[int]
) -> None:
    # Given a member's score written again and again, each change some microseconds after
    # the last (a write of the same score keeps its time)
    log: list[tuple[int, Decimal]] = []
    moment = 1_000
    state: ScoreState | None = None
    for index, score in enumerate(scores):
        moment += gaps[index % len(gaps)] + 1
        state = state.then(score, moment) if state else ScoreState.first(score, moment)
        if not log or log[-1][1] != score:
            log.append((moment, score))
    assert state is not None

    # Then at every moment the state answers what the full log says, or UNKNOWN where the
    # history was cut to fit; never a wrong score
    assert len(state.history_text()) <= HISTORY_CHARS + 1
    assert decode_history(state.history_text()) == (state.history, state.history_complete)
    for probe in [1_000, *(t - 1 for t, _ in log), *(t for t, _ in log), moment + 10]:
        held = [score for since, score in log if since <= probe]
        answer = state.score_at(probe)
        if answer is UNKNOWN:
            assert not state.history_complete
            assert probe < state.history[-1][0] if state.history else probe < state.reached_at_us
        else:
            assert answer == (held[-1] if held else None)
    # and a history that fits whole is complete
    if len(log) <= 4:
        assert state.history_complete


def test_a_state_read_from_an_item_without_history_knows_only_its_first_score() -> None:
    first = ScoreState(Decimal(5), 1, 100)
    assert first.score_at(99) is None
    later = ScoreState(Decimal(7), 3, 300, (), history_complete=False)
    assert later.score_at(299) is UNKNOWN
    assert later.score_at(300) == Decimal(7)


def test_a_new_score_is_timed_after_the_one_it_replaces_whatever_the_writers_clock() -> None:
    # Given a score written at 1,000 µs
    first = ScoreState.first(Decimal(5), 1_000)

    # When a writer whose clock is behind writes a new score, and one whose clock is
    # ahead writes the same score again
    behind = first.then(Decimal(7), 400)
    again = behind.then(Decimal(7), 9_000)

    # Then the new score's time follows the old one's, the history stays in order, and a
    # score written again keeps its time
    assert behind.reached_at_us == 1_001
    assert behind.score_at(1_000) == Decimal(5)
    assert behind.score_at(1_001) == Decimal(7)
    assert again.reached_at_us == 1_001


def test_a_follow_counts_from_its_start_through_the_lists_replacements() -> None:
    # Given ana's list: bo from t=10, then cy added at t=20 and bo dropped at t=30
    rivals = Rivals().replaced(["bo"], 10)
    rivals = rivals.replaced(["bo", "cy"], 20)
    rivals = rivals.replaced(["cy"], 30)

    # Then each follow counts from its start, and bo's ended one until its end: each moment
    # names the start of the follow that held then (the notifier compares it with the
    # rival's last delete), or None
    assert [rivals.follow_began("bo", t) for t in (9, 10, 29, 30)] == [None, 10, 10, None]
    assert [rivals.follow_began("cy", t) for t in (19, 20, 1_000)] == [None, 20, 20]
    assert rivals.follow_began("dee", 25) is None

    # When bo is followed again at t=40, both spans count
    again = rivals.replaced(["cy", "bo"], 40)
    assert [again.follow_began("bo", t) for t in (15, 35, 40, 99)] == [10, None, 40, 40]
    assert again.ids == ("cy", "bo")

    # and an ended follow is forgotten once no stream record can still be judged by it
    much_later = again.replaced([], 40 + 3 * 24 * 3600 * 1_000_000)
    assert "bo" in much_later.ended  # its latest span ended just now
    forgotten = much_later.replaced([], 40 + 6 * 24 * 3600 * 1_000_000)
    assert forgotten.ended == {}


def test_a_list_from_before_follow_times_counts_its_rivals_as_followed_all_along() -> None:
    legacy = Rivals(ids=("bo",))
    assert legacy.follow_began("bo", 0) == 0
