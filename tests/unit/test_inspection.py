"""What the consistency checker derives from a board's items, and the differences it names,
on states built by hand (tests/integration/test_consistency.py checks real boards)."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

from podium import keys, treebuild
from podium.counttree import Count, Entry, Inner, Leaf, Node
from podium.dal.audit import BoardItems, IndexEntry, StoredProfile, StoredScore
from podium.inspection import BoardState, inspect
from podium.models import BoardSettings, HeadItem, ScoreState
from tests.treestore import small_nodes

BOARD = "b"
SETTINGS = BoardSettings(shards=2, reset="daily")
TODAY, YESTERDAY = "2026-11-23", "2026-11-22"


def score(member: str, value: int, period: str = TODAY, *, hidden: bool = False) -> StoredScore:
    state = ScoreState(Decimal(value), 1, 1_000 + value, hidden=hidden, created_us=500)
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
        tree=tree_of(today),
    )


def tree_of(scores: list[StoredScore]) -> list[Node]:
    """The count tree the stream leaves for these score items: built from their keys."""
    return treebuild.build({s.member_id: Entry(str(s.sort_key), (500, 1)) for s in scores})


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
        "treeNodes": 1,
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
        tree=tree_of([a]),
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
    # what the head and the tree are rebuilt from: each ranked member's key and version
    assert found.ranked == {s.member_id: Entry(str(s.sort_key), (500, 1)) for s in ranked_today(state)}
    # an incomplete head that holds the first keys is as the stream leaves it
    assert named(replace(state, head=replace(short, complete=False))) == []


def ranked_today(state: BoardState) -> list[StoredScore]:
    return [s for s in state.items.scores if s.period == TODAY and s.sort_key is not None]


def test_a_tree_that_holds_a_member_wrongly_is_named_by_member() -> None:
    # Given the consistent state, and trees that lost b, hold a twice, hold b at another
    # key, and hold c, who is hidden (no score item of the period carries its key)
    state = consistent()
    a, b = ranked_today(state)
    leaf = state.tree[0]
    assert isinstance(leaf, Leaf)
    elsewhere = Entry(
        keys.placement(BOARD, SETTINGS, "b", replace(b.state, score=Decimal(99)), TODAY).sort_key, (500, 2)
    )
    cases = {
        "lost": {"a": leaf.entries["a"]},
        "at another key": {**leaf.entries, "b": elsewhere},
        "not ranked": {
            **leaf.entries,
            "c": Entry(keys.placement(BOARD, SETTINGS, "c", b.state, TODAY).sort_key, (500, 1)),
        },
    }
    details = {}
    for case, entries in cases.items():
        found = inspect(replace(state, tree=[replace(leaf, entries=entries)]))
        assert [(str(d.kind), d.member_id) for d in found.differences] == [
            ("tree", "b" if case != "not ranked" else "c")
        ], case
        details[case] = found.differences[0].detail
        # and the head and the tree are rebuilt from the items' keys and versions
        assert found.ranked == {s.member_id: Entry(str(s.sort_key), (500, 1)) for s in (a, b)}
    assert details["lost"] == "the count tree does not hold b (score 9)"
    assert (
        details["at another key"] == "the count tree holds b (score 99); its score item carries b (score 9)"
    )
    assert (
        details["not ranked"] == "the count tree holds c (score 9), which no score item of the period carries"
    )


def nine_members() -> tuple[BoardState, list[Node]]:
    """A consistent board of 9 members (``mN`` scores N) whose tree has leaves of 2 and
    three levels above them (built with small nodes)."""
    scores = [score(f"m{i}", i) for i in range(9)]
    with small_nodes(3, 3):
        nodes = tree_of(scores)
    state = replace(
        consistent(),
        items=BoardItems({s.member_id: StoredProfile(s.member_id, False, None) for s in scores}, scores),
        entries=[entry(s) for s in scores],
        member_count=9,
        period_count=9,
        head=HeadItem(sorted(str(s.sort_key) for s in scores), True, 1),
        tree=nodes,
    )
    assert inspect(state).differences == []
    return state, nodes


def name(node: Node) -> str:
    """A node as the checker names it: by its level and the member (and score) it starts at."""
    if node.root:
        return "the count tree's root"
    start = repr(node.lo) if node.lo else "the first key"
    return f"the count tree's node of level {node.level} from {start}"


def replaced(nodes: list[Node], old: Node, new: Node) -> list[Node]:
    return [new if node is old else node for node in nodes]


def test_a_member_in_two_leaves_or_outside_its_leaf_is_named() -> None:
    # Given the board of 9, a member of its second leaf, and the first leaf's parent
    state, nodes = nine_members()
    leaves = sorted((n for n in nodes if isinstance(n, Leaf)), key=lambda n: n.lo)
    first, second = leaves[0], leaves[1]
    member, held = next(iter(second.entries.items()))
    parent = next(n for n in nodes if isinstance(n, Inner) and n.level == 1 and first.lo in n.children)

    # When the first leaf holds it too, or holds it instead of the second
    doubled = replace(first, entries={**first.entries, member: held})
    twice = replaced(nodes, first, doubled)
    left = replace(second, entries={m: e for m, e in second.entries.items() if m != member})
    moved = replaced(twice, second, left)

    # Then the member is named, and the leaves' counts that no longer match their parent's
    assert [(d.member_id, d.detail) for d in inspect(replace(state, tree=twice)).differences] == [
        (None, f"{name(parent)} counts 2 members under {name(first)}, which holds 3"),
        (member, f"the count tree holds {member} 2 times"),
    ]
    details = [d.detail for d in inspect(replace(state, tree=moved)).differences]
    assert (
        f"the count tree holds {member} (score {member[1:]}) in a leaf whose range does not hold its key"
        in details
    )


def test_inner_counts_ranges_and_unreached_nodes_are_checked() -> None:
    # Given the board of 9, its root and the first leaf and its parent
    state, nodes = nine_members()
    root = next(n for n in nodes if n.root)
    assert isinstance(root, Inner)
    lo, count = sorted(root.children.items())[-1]
    child = next(n for n in nodes if not n.root and (n.level, n.lo) == (root.level - 1, lo))
    first = min((n for n in nodes if isinstance(n, Leaf)), key=lambda n: n.lo)
    parent = next(n for n in nodes if isinstance(n, Inner) and n.level == 1 and first.lo in n.children)

    # When the root counts one member too many under a child, the first leaf's range ends
    # before its next sibling starts, or a node is reached from nowhere
    off = replaced(nodes, root, replace(root, children={**root.children, lo: Count(count.n + 1, count.sv)}))
    assert first.hi is not None
    # (a bound just above the leaf's last key, still below the next leaf's first)
    short = max(entry.key for entry in first.entries.values()) + " "
    assert short < first.hi
    gap = replaced(nodes, first, replace(first, hi=short))
    stray = [*nodes, Leaf("zzz", None, 1, {})]

    # Then each is named
    def details(tree: list[Node]) -> list[str]:
        return [d.detail for d in inspect(replace(state, tree=tree)).differences]

    assert details(off) == [
        f"{name(root)} counts {count.n + 1} members under {name(child)}, which holds {count.n}"
    ]
    assert details(gap) == [f"{name(first)} does not end where {name(parent)} has its next child start"]
    assert details(stray) == ["1 nodes of the count tree are reached from no node above them"]
    # and a board of members with no tree at all
    assert details([]) == ["the count tree has no root, and 9 members are ranked"]


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
