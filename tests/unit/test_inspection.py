"""What the consistency checker derives from a board's items, and the differences it names,
on states built by hand (tests/integration/test_consistency.py checks real boards)."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from podium import keys
from podium.dal.audit import BoardItems, IndexEntry, StoredProfile, StoredScore
from podium.inspection import BoardState, inspect
from podium.models import BoardSettings, Bucket, HeadItem, ScoreState

BOARD = "b"
SETTINGS = BoardSettings(shards=2, reset="daily")
TODAY, YESTERDAY = "2026-11-23", "2026-11-22"


def score(member: str, value: int, period: str = TODAY, *, hidden: bool = False) -> StoredScore:
    state = ScoreState(Decimal(value), 1, 1_000 + value, hidden=hidden)
    if hidden:
        return StoredScore(member, period, state, None, None)
    placement = keys.placement(BOARD, SETTINGS, member, state, period)
    return StoredScore(member, period, state, placement.partition, placement.sort_key)


def entry(stored: StoredScore, pk: str | None = None) -> IndexEntry:
    assert stored.partition is not None
    assert stored.sort_key is not None
    return IndexEntry(
        pk or f"M#{BOARD}#{stored.member_id}", f"SCORE#{stored.period}", stored.partition, stored.sort_key
    )


def consistent() -> BoardState:
    """Three members with a score today (c hidden), a and b yesterday too."""
    scores = [
        score("a", 5),
        score("b", 9),
        score("c", 7, hidden=True),
        score("a", 1, YESTERDAY),
        score("b", 2, YESTERDAY),
    ]
    today = sorted((s for s in scores if s.period == TODAY and s.sort_key), key=lambda s: str(s.sort_key))
    ranked = [str(s.sort_key) for s in today]
    return BoardState(
        board_id=BOARD,
        settings=SETTINGS,
        period=TODAY,
        items=BoardItems(
            {m: StoredProfile(m, m == "c", None) for m in "abc"},
            scores,
        ),
        entries=[entry(s) for s in today],
        member_count=2,
        period_count=2,
        head=HeadItem(ranked, complete=True, version=3),
        buckets=[Bucket("", 2, 1)],
    )


def named(state: BoardState) -> list[tuple[str, str | None]]:
    return sorted((str(d.kind), d.member_id) for d in inspect(state).differences)


def test_a_consistent_state_has_no_differences_and_is_counted() -> None:
    found = inspect(consistent())
    assert found.differences == []
    assert found.counts == {
        "members": 3,
        "hidden": 1,
        "scores": 3,
        "indexEntries": 2,
        "headKeys": 2,
        "buckets": 1,
    }


def test_an_item_whose_keys_the_index_does_not_show_is_the_index_lagging() -> None:
    state = consistent()
    state = replace(state, entries=state.entries[:1])
    assert named(state) == [("index_lag", "a")]
    assert not inspect(state).through_stream  # nothing to write: the index catches up by itself


def test_another_periods_item_in_this_periods_partition_is_a_stray_written_again_where_it_belongs() -> None:
    # Given a's score item of yesterday carrying today's partition
    state = consistent()
    yesterday = next(s for s in state.items.scores if s.member_id == "a" and s.period == YESTERDAY)
    today_partition = keys.rank_partition_key(BOARD, TODAY, keys.shard_of("a", 2))
    moved = replace(yesterday, partition=today_partition)
    scores = [moved if s is yesterday else s for s in state.items.scores]
    state = replace(
        state,
        items=BoardItems(state.items.profiles, scores),
        entries=[*state.entries, entry(moved)],
    )

    # Then today's check names the stray and writes that item again (as a shown member's)
    found = inspect(state)
    assert named(state) == [("index_stray", "a")]
    assert [(r.score.period, r.hidden) for r in found.rewrites] == [(YESTERDAY, False)]
    assert found.strays == []


def test_an_entry_of_an_item_that_is_no_score_item_is_dropped() -> None:
    state = consistent()
    b = next(s for s in state.items.scores if s.member_id == "b" and s.period == TODAY)
    foreign = replace(entry(b, pk="M#other#b"), sort_key="2500#zz")
    found = inspect(replace(state, entries=[*state.entries, foreign]))
    assert [(str(d.kind), d.member_id) for d in found.differences] == [("index_stray", None)]
    assert found.strays == [foreign]


def test_a_shown_member_whose_item_says_hidden_is_ranked_nowhere() -> None:
    state = consistent()
    profiles = {**state.items.profiles, "c": StoredProfile("c", False, None)}
    state = replace(state, items=BoardItems(profiles, state.items.scores), member_count=3)
    found = inspect(state)
    assert named(state) == [("hidden_flag", "c")]
    assert "is marked hidden (so it is ranked nowhere)" in found.differences[0].detail
    assert [(r.score.member_id, r.hidden) for r in found.rewrites] == [("c", False)]
    # and the period's count is judged by the items as the stream counts them (c's is hidden)
    assert found.period_count is None


def test_a_member_of_a_never_resetting_board_with_no_score_item_is_named() -> None:
    state = consistent()
    never = BoardSettings(shards=2)
    a = replace(score("a", 5), period="all")
    placement = keys.placement(BOARD, never, "a", a.state, "all")
    a = replace(a, partition=placement.partition, sort_key=placement.sort_key)
    state = replace(
        state,
        settings=never,
        period="all",
        items=BoardItems({m: StoredProfile(m, False, None) for m in "ad"}, [a]),
        entries=[replace(entry(a), sk="SCORE#all")],
        period_count=None,
        head=HeadItem([placement.sort_key], True, 1),
        buckets=[Bucket("", 1, 1)],
    )
    assert named(state) == [("score_missing", "d")]
    assert not inspect(state).through_stream  # no score can be made up


def test_a_head_that_says_it_is_complete_and_is_not() -> None:
    state = consistent()
    assert state.head is not None
    short = replace(state.head, keys=state.head.keys[:1])
    state = replace(state, head=short)
    found = inspect(state)
    assert named(state) == [("head", None)]
    assert "its 1 keys are the whole board, and 2 members are ranked" in found.differences[0].detail
    assert found.ranked == [e.sort_key for e in state.entries]  # what the head and buckets are rebuilt from
    # an incomplete head that holds the first keys is as the stream leaves it
    assert named(replace(state, head=replace(short, complete=False))) == []


def test_buckets_that_do_not_start_below_every_key_or_miscount() -> None:
    state = consistent()
    first = state.entries[0].sort_key
    found = inspect(replace(state, buckets=[Bucket(first, 2, 1)]))
    assert [str(d.kind) for d in found.differences] == ["buckets"]
    assert "not below every key" in found.differences[0].detail
    found = inspect(replace(state, buckets=[Bucket("", 1, 1), Bucket(state.entries[1].sort_key, 2, 1)]))
    assert [d.detail for d in found.differences] == [
        "score bucket 2 of 2 (from a (score 5)) counts 2; 1 ranked members are in its range"
    ]


def test_counts_are_judged_as_stored_negative_ones_too() -> None:
    found = inspect(replace(consistent(), member_count=-1, period_count=None))
    assert [d.detail for d in found.differences] == [
        "memberCount is -1; the board has 2 members that are not hidden",
        f"the count of period {TODAY} is 0; 2 members that are not hidden have a score in it",
    ]
    assert (found.member_count, found.period_count) == ((-1, 2), (None, 2))


def test_a_hidden_member_ranked_in_another_period_is_named_and_written_once() -> None:
    # Given c, hidden, whose score item of yesterday carries index keys, placed in today's
    # partition
    state = consistent()
    yesterday = score("c", 4, YESTERDAY)
    misplaced = replace(yesterday, partition=keys.rank_partition_key(BOARD, TODAY, keys.shard_of("c", 2)))
    state = replace(
        state,
        items=BoardItems(state.items.profiles, [*state.items.scores, misplaced]),
        entries=[*state.entries, entry(misplaced)],
    )

    # Then today's check names both (a hidden member ranked, a stray here), and writes the
    # item once, hidden
    found = inspect(state)
    assert named(state) == [("hidden_ranked", "c"), ("index_stray", "c")]
    assert "its score item in period 2026-11-22 is in the index" in found.differences[0].detail
    assert [(r.score.member_id, r.score.period, r.hidden) for r in found.rewrites] == [("c", YESTERDAY, True)]
