"""The planner's two workloads side by side (planner.fleet, planner.alternatives,
planner.compare): many quiet boards, each planned with its own rates, and the comparison
with ElastiCache, against figures worked out by hand (docs/capacity.md)."""

from __future__ import annotations

import pytest

from planner import alternatives, capacity, compare, fleet
from planner.capacity import TreeShape

# The compact layout the hand-worked figures assume (PLANNED_TREE may move on)
SHAPE = TreeShape(leaf_entries=20, children=36, node_wcu=1)
QUIET = fleet.QUIET_BOARDS
MONTH = capacity.SECONDS_PER_MONTH


def test_the_quiet_boards_are_five_sizes_of_2000_boards_each_with_its_own_rates():
    # Given 10,000 boards of 30 to 1,000 members, 300 changes and 3,000 reads a second in all
    assert QUIET.sizes() == [30, 272, 515, 758, 1_000]
    board = fleet.board_workload(QUIET, 30)
    # Then a board changes 0.03 times a second and is read 0.3 times (a fifth ranks)
    assert board.writes_per_s == pytest.approx(0.03)
    assert board.top_reads_per_s == pytest.approx(0.24)
    assert board.rank_reads_per_s == pytest.approx(0.06)
    # on one stream shard (the table's 300 WCU/s), its record alone in a batch, its head
    # the primary alone, rewritten by each change (0.03 a second)
    p = capacity.plan(board, tree=SHAPE)
    assert (p.upkeep.stream_shards, p.upkeep.batch_records, p.upkeep.head_copies) == (1, 1, 0)
    assert p.upkeep.head_writes_per_s == pytest.approx(0.03)


def test_a_quiet_board_s_change_and_reads_by_hand():
    plans = {m: capacity.plan(fleet.board_workload(QUIET, m), tree=SHAPE) for m in QUIET.sizes()}
    # A far change applied alone: its item 1, the index 2, the notifier's mark 1, the tree's
    # two leaves and the nodes above them (30 members: 2 leaves and the root, 3; 758: 38
    # leaves, 2 nodes, root: 2 + 1.5 + 0.5 = 4), and the head rewritten (30 entries: 640 B,
    # 1 WCU; 758: 128 keys and 39 ladder samples, 3,106 B, 4 WCU)
    expected = {30: 1 + 2 + 1 + 3 + 1, 272: 4 + 3 + 3, 515: 4 + 3 + 3, 758: 4 + 4 + 4, 1_000: 4 + 4 + 4}
    for members, wcu in expected.items():
        assert plans[members].far_change_wcu == pytest.approx(wcu), members
    # Every read finds nothing kept (its instance is one of 36 that serve 10,000 boards): a
    # top reads the layout (1), the board and count (1) and the head (1); a rank the layout,
    # the board and its score (2) and the tree's path (the service's layout: 2 nodes up to
    # 272 members, 3 from 515): 4 or 4.5
    for members, p in plans.items():
        assert p.top_read_rcu == pytest.approx(3), members
        assert p.rank_read_rcu == pytest.approx(4 if members <= 272 else 4.5), members


def test_the_quiet_boards_month_by_hand():
    result = fleet.plan_fleet(QUIET, tree=SHAPE)
    # 300 changes x 10.4 WCU (the mean of 8, 10, 10, 12, 12) = 3,120 WRU/s: $5,124.60;
    # 2,400 tops x 3 + 600 ranks x 4.3 = 9,780 RRU/s: $3,212.73; 5,150,000 members x 865 B
    # = 4.455 GB: $1.11
    assert result.far_change_wcu == pytest.approx(10.4)
    assert result.table_wcu + result.index_wcu == pytest.approx(3_120)
    assert result.monthly_write_cost == pytest.approx(3_120 * MONTH / 1e6 * 0.625)
    assert result.table_rcu + result.index_rcu == pytest.approx(9_780)
    assert result.monthly_read_cost == pytest.approx(9_780 * MONTH / 1e6 * 0.125)
    assert result.storage_gb == pytest.approx(5_150_000 * 865 / 1e9)
    assert result.monthly_cost == pytest.approx(8_338.44, abs=0.01)


def test_elasticache_by_hand():
    # Three cache.r7g.large nodes: 3 x $0.219 x 730 hours
    assert alternatives.node_cluster_monthly() == pytest.approx(479.61)
    # Serverless (Valkey), the quiet boards: ZADD and ZREVRANK at 2 ECPUs (assumed), a top
    # page of 10 entries (300 B) at 2 too: (300 + 600 + 2,400) x 2 = 6,600 ECPUs a second,
    # 17,345 M a month at $0.0023: $39.89; 5,150,000 members x 100 B = 0.515 GB at $0.084
    # an hour: $31.58
    quiet = alternatives.serverless_monthly(compare.fleet_commands(QUIET))
    assert quiet == pytest.approx(6_600 * MONTH / 1e6 * 0.0023 + 0.515 * 0.084 * 730)
    assert quiet == pytest.approx(71.47, abs=0.01)
    # The hot board: a top page of 100 entries is 2.93 KB, 2.93 ECPUs; 100 MB stored (the minimum)
    hot = alternatives.serverless_monthly(compare.board_commands(compare.HOT_BOARD))
    ecpus = 9_000 * 2 + 16_000 * 100 * 30 / 1_024
    assert hot == pytest.approx(ecpus * MONTH / 1e6 * 0.0023 + 0.1 * 0.084 * 730)


def test_break_even_rates_of_the_quiet_boards_by_hand():
    # Given the quiet boards' month in proportion to their rate (a batch of 1 and one stream
    # shard at any rate up to hundreds a second): $8,337.33 of requests at 300 changes a
    # second, $27.791 a month for each change a second, and $1.11 of storage
    sides = compare.compare(prices=None, tree=SHAPE)
    quiet = sides[1]
    per_change = (8_338.44 - 1.1137) / 300
    # Then Podium on demand costs less than the node cluster below (479.61 - 1.11) / 27.79
    assert quiet.versus_node_cluster.on_demand == pytest.approx((479.61 - 1.1137) / per_change, rel=0.002)
    assert quiet.versus_node_cluster.on_demand == pytest.approx(17.2, abs=0.05)
    # and than Serverless below (31.58 - 1.11) / (27.79 - 39.89 / 300)
    serverless_per_change = (71.47 - 31.58) / 300
    expected = (31.58 - 1.1137) / (per_change - serverless_per_change)
    assert quiet.versus_serverless.on_demand == pytest.approx(expected, rel=0.005)
    # at 300 changes a second a cache is cheaper, and the table says so
    assert quiet.dynamodb_on_demand > quiet.node_cluster > quiet.serverless
    assert "a cache is cheaper" in quiet.verdict


def test_the_hot_board_s_break_even_is_where_the_costs_meet():
    hot = compare.compare(tree=SHAPE)[0]
    rate = hot.versus_node_cluster.on_demand
    at_rate = compare.board_bill(compare.scaled(compare.HOT_BOARD, rate), capacity.Prices(), SHAPE)
    assert at_rate.dynamodb_on_demand == pytest.approx(alternatives.node_cluster_monthly(), rel=0.005)
    # and far below the reference's 5,000 changes a second
    assert 0 < rate < 100


def test_break_even_says_never_and_always():
    assert alternatives.break_even(lambda r: 10 + r, lambda r: 5 + r) == 0
    assert alternatives.break_even(lambda r: r, lambda r: 1 + 2 * r) == float("inf")
    assert alternatives.break_even(lambda r: 2 * r, lambda r: 100.0) == pytest.approx(50, rel=0.001)


def test_the_comparison_shows_each_board_size():
    hot, quiet = compare.compare(tree=SHAPE)
    assert [(b.members, b.boards) for b in hot.boards] == [(1_000_000, 1)]
    assert [b.members for b in quiet.boards] == QUIET.sizes()
    assert [b.far_change_wcu for b in quiet.boards] == pytest.approx([8, 10, 10, 12, 12])
    assert [b.tree_far_wcu for b in quiet.boards] == pytest.approx([3, 3, 3, 4, 4])
    assert hot.boards[0].batch_records == 250
