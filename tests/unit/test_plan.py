"""The capacity planner's arithmetic against figures worked out by hand (docs/capacity.md)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from planner import capacity
from planner.__main__ import main
from planner.capacity import Workload, plan, reshard_to
from podium import recent
from podium.dal import schema

# The count tree's writes of one move on 1,000,000 members in batches of 250 (what a stream
# shard of 1,000 records a second gathers between Lambda's polls, 4 a second), by hand, for
# a compact layout (leaves of 20, 36 children, 1 WCU a node write; the tests of the arithmetic
# name it, so that a new PLANNED_TREE changes only the worked example's): 50,000 leaves, then
# 1,389, 39, 2 and the root. Far: 250 moves touch 2 leaves each, 50,000 (1 - (1 -
# 2/50,000)^250) = 497.5 distinct; 1.9993 nodes each of level 1 (two paths that share a
# node there with the chance 1/1,389), 1,389 (1 - (1 - 1.9993/1,389)^250) = 420.0; every
# node of the levels above (39 and 2) and the root: 959.5 writes, 3.8382 a move. Near: the
# leaf alone, 50,000 (1 - (1 - 1/50,000)^250) = 249.4 writes, 0.9975 a move.
SHAPE = capacity.TreeShape(leaf_entries=20, children=36, node_wcu=1)
FAR_AT_250 = 3.8382
NEAR_AT_250 = 0.9975


def test_one_shard_takes_400_updates_a_second_at_80_percent():
    # Given 400 updates/s: 800 index WCU/s, exactly 80 % of one partition's 1,000
    # When / Then
    assert capacity.required_shards(400) == 1
    assert capacity.required_shards(401) == 2  # 802 > 800
    assert capacity.required_shards(0) == 1


def test_5000_updates_need_13_shards():
    # Given 5,000 updates/s = 10,000 index WCU/s; 10,000 / 800 = 12.5
    result = plan(
        Workload(writes_per_s=5_000, top_reads_per_s=0, rank_reads_per_s=0, members=1_000_000), tree=SHAPE
    )

    # Then 13 shards, each taking 10,000 / 13 = 769.2 WCU/s
    assert result.shards == 13
    assert result.index_wcu == 10_000
    assert result.index_wcu_per_shard == pytest.approx(769.23, abs=0.01)
    assert result.max_writes_per_s == 5_200  # 13 * 800 / 2
    assert not result.over_capacity
    # The streamed table takes the 5,000 score items' WCU/s: 5 partitions, 5 stream shards,
    # each gathering 1,000 records a second, 250 between two polls: batches of 250
    assert (result.upkeep.stream_shards, result.upkeep.batch_records) == (5, 250)
    # table: 5,000 * (1 score + 3.8382 count tree (a far move in batches of 250:
    # FAR_AT_250 above) + 1 notifier's mark) + min(5,000 * 10 %, 20 batches a second) head
    # writes of 4 KB to the primary alone (no reads: no copies) = 29,271
    assert result.upkeep.head_copies == 0
    assert result.upkeep.head_writes_per_s == 20
    assert result.table_wcu == pytest.approx(5_000 * (1 + FAR_AT_250 + 1) + 20 * 4, abs=0.5)


def test_throttling_edge_at_100_shards():
    # Given 100 shards take 100 * 800 / 2 = 40,000 updates/s
    at_edge = plan(Workload(writes_per_s=40_000, top_reads_per_s=0, rank_reads_per_s=0, members=10))
    past_edge = plan(Workload(writes_per_s=40_001, top_reads_per_s=0, rank_reads_per_s=0, members=10))

    # Then 40,000 fits exactly; 40,001 needs 101 shards and is capped at 100 with a warning
    assert (at_edge.shards, at_edge.over_capacity, at_edge.warnings) == (100, False, [])
    assert past_edge.shards == 100
    assert past_edge.required_shards == 101
    assert past_edge.over_capacity
    assert any("events" in warning for warning in past_edge.warnings)


def test_too_few_shards_chosen_by_hand_throttle_the_index():
    # Given 1,000 updates/s on 2 shards: 1,000 index WCU/s each, over 800
    result = plan(Workload(writes_per_s=1_000, top_reads_per_s=0, rank_reads_per_s=0, members=10, shards=2))

    # Then
    assert result.index_wcu_per_shard == 1_000
    assert any("throttles" in warning for warning in result.warnings)


def test_query_rcu_rounds_up_to_4_kb_at_half_a_unit():
    assert capacity.query_rcu(1) == 0.5  # 100 B
    assert capacity.query_rcu(40) == 0.5  # 4,000 B
    assert capacity.query_rcu(41) == 1.0  # 4,100 B: two blocks
    assert capacity.query_rcu(0) == 0.5  # an empty query still costs a block


def test_exact_top_100_on_13_shards():
    # Given the hint's 100 + 25 + 1 = 126 keys over 13 shards: 9.7 -> 10 keys = 1,000 B a shard
    # Then 13 queries of one block (0.5) + 1 for the board and count + 1 for the head = 8.5
    assert capacity.hinted_keys(100) == 126
    assert capacity.top_from_index_rcu(100, 13) == 8.5
    # and a top 1,000 reads past the head: 1,000 + 250 + 1 + one ladder step of 16 = 1,267 keys,
    # 98 a shard = 9,800 B -> 3 blocks -> 1.5 RCU a shard, 19.5 + 2
    assert capacity.hinted_keys(1000) == 1267
    assert capacity.top_from_index_rcu(1000, 13) == 21.5


def test_top_from_the_head_is_two_units():
    # (with nothing kept in the functions: ReadCacheSeconds 0)
    result = plan(
        Workload(
            writes_per_s=10, top_reads_per_s=1_000, rank_reads_per_s=0, members=100, k=100, read_cache_s=0
        )
    )
    assert result.top_rcu_per_read == 2.0
    assert result.index_rcu == 0
    # 2 RCU a read, and the layout of each of the 10 busy instances (1,000/s x 10 ms) every 5 s
    assert result.table_rcu == 2_000 + 10 / 5
    # k over 100 reads the index: one shard reads 101 + 1 = 102 keys -> 10,200 B -> 3 blocks
    deep = plan(Workload(writes_per_s=10, top_reads_per_s=1_000, rank_reads_per_s=0, members=100, k=101))
    assert deep.top_rcu_per_read == 3.5  # 3 * 0.5 + 1 (board, count) + 1 (head)
    assert deep.index_rcu == 1_500


def test_a_rank_reads_the_count_tree_s_path_whatever_the_shards():
    # Given 1,000,000 members in leaves of 15: 66,667 leaves, then 2,778, 116, 5 and 1 node
    # above them (24 children a node): a path of 5 nodes, 0.5 RCU each
    assert capacity.tree_levels(1_000_000) == [66_667, 2_778, 116, 5, 1]
    total, path = capacity.rank_rcu(1_000_000)

    # Then 2 (the board and the score, strongly consistent) + 2.5 (the path) = 4.5 RCU, on
    # any shard count
    assert (path, total) == (2.5, 4.5)
    assert plan(Workload(10, 0, 100, 1_000_000, shards=100)).rank_rcu_per_read == 4.5
    # 10,000,000 and 100,000,000 members: a level more (666,667 leaves; 6,666,667), 5 RCU
    assert capacity.tree_height(10_000_000) == capacity.tree_height(100_000_000) == 6
    assert capacity.rank_rcu(100_000_000) == (5.0, 3.0)
    # A board of up to 15 members is one leaf: 1 node
    assert capacity.tree_height(15) == 1
    assert capacity.tree_height(16) == 2
    # The naive COUNT reads 500,000 keys: 38,462 a shard = 3,846,200 B -> 940 blocks -> 470 RCU
    assert capacity.naive_rank_rcu(1_000_000, 13) == 13 * 470 + 1.5


def test_100_ranks_read_the_union_of_their_paths():
    # Given 100 members spread over 1,000,000: 100 leaves, 100 of the 2,778 nodes above, 100
    # of the 116 and all 5 of the next levels, and the root: 306 nodes at 0.5 RCU
    assert capacity.ranks_rcu(1_000_000) == 153.0
    # and on 100,000,000: 100 + 100 + 100 + 100 + 21 + 1 = 422 nodes
    assert capacity.ranks_rcu(100_000_000) == 211.0


def test_the_planner_s_tree_is_the_service_s():
    from podium import cost, counttree, treebuild

    assert int(counttree.LEAF_MAX * treebuild.BUILD_FILL) == capacity.TREE_LEAF_MEMBERS
    assert int(counttree.FANOUT * treebuild.BUILD_FILL) == capacity.TREE_FANOUT
    for members in (0, 15, 16, 5_000, 1_000_000, 100_000_000):
        assert capacity.tree_levels(members) == cost.tree_levels(members)
    assert capacity.ranks_rcu(1_000_000) == cost.path_units(1_000_000, 100)


def test_ranks_load_the_count_tree_s_partition_keys_and_its_root():
    # Given 4,000 ranks a second on 1,000,000 members, with nothing kept in the functions:
    # 4,000 x 2.5 RCU of tree nodes, of which the root, read by every rank, takes 4,000 x 0.5
    def ranks(per_s: float) -> Workload:
        return Workload(
            writes_per_s=10, top_reads_per_s=0, rank_reads_per_s=per_s, members=1_000_000, read_cache_s=0
        )

    result = plan(ranks(4_000))
    assert (result.tree_partition_rcu, result.tree_root_rcu) == (10_000, 2_000)
    assert result.index_rcu == 0  # a rank queries no shard
    # 4.5 RCU a rank, and 80 busy instances' layouts (4,000/s x 20 ms) every 5 s
    assert result.table_rcu == 4_000 * 4.5 + 80 / 5
    # the nodes below the root are spread over 64 keys: the root's 5 children take 400 each,
    # the 3 levels below them 6,000 over 64 keys, and one key may hold two of the children
    assert result.tree_node_rcu == 400
    assert result.tree_spread_rcu == 6_000 / 64 + 2 * 400
    assert not any("count tree" in warning for warning in result.warnings)
    # and 6,000 ranks a second take 3,000 RCU/s of the root alone: past what an item serves
    hot = plan(ranks(6_000))
    assert any("root" in warning and "one item" in warning for warning in hot.warnings)


def test_the_issue_s_ranks_take_no_partition_key_of_the_tree_past_80_percent():
    # Given issue 15's load: 10,000 ranks a second on 1,000,000 members, the root kept 1 s
    result = plan(
        Workload(
            writes_per_s=5_000, top_reads_per_s=100_000, rank_reads_per_s=10_000, members=1_000_000, k=100
        )
    )
    # Then the tree takes 20,100 RCU/s in all, as on one key it did: the root 100 on its own
    # key, each of the root's 5 children 1,000 (a third of what one item serves), and the
    # busiest of the 64 keys 15,000 / 64 of the levels below and two of the root's children
    assert result.tree_partition_rcu == 20_100
    assert result.tree_root_rcu == 100
    assert result.tree_node_rcu == 1_000
    assert result.tree_spread_rcu == pytest.approx(2_234.4, abs=0.1)
    assert result.tree_spread_rcu < capacity.SAFETY_FRACTION * capacity.PARTITION_RCU_PER_S
    assert not any("count tree" in warning for warning in result.warnings)
    # and at 20,000 ranks a second the busiest key goes past 80 %: the planner says so
    twice = plan(Workload(writes_per_s=10, top_reads_per_s=0, rank_reads_per_s=20_000, members=1_000_000))
    assert any("T#{board}#{period}#{n}" in warning for warning in twice.warnings)


def test_the_root_s_children_crowd_a_key_as_a_hash_may():
    # Given nodes hashed over 64 keys: the most one key holds, but with a chance under 1 %
    # Then 5 children: two on one key happen about 15 % of the time, three under 0.3 %
    assert capacity.crowding(5) == 2
    assert capacity.crowding(1) == 1
    assert capacity.crowding(0) == 0
    # 17 children (100,000,000 members): three on a key with a chance of about 17 %
    assert capacity.crowding(17) == 3
    # the planner's spread is the service's
    from podium.dal import schema

    assert capacity.TREE_SPREAD == schema.TREE_SPREAD


def test_kept_in_the_functions_a_hot_board_s_items_are_read_once_a_second_per_instance():
    # Given the issue's hot board: 100,000 top-100 reads and 10,000 ranks a second on
    # 1,000,000 members, each instance keeping the board, count, head and root for 1 s
    result = plan(
        Workload(writes_per_s=10, top_reads_per_s=100_000, rank_reads_per_s=10_000, members=1_000_000, k=100)
    )
    # The reads keep 1,000 + 200 instances busy (10 ms a top, 20 ms a rank)
    assert result.read_instances == 1_200
    # Each reads the head four times a second: it keeps the head a quarter second at most, the
    # API's 2 s of head lag less the stream's second and its margin. 4,000 RCU/s of the head,
    # not 100,000, spread over its 4 copies' partitions (each instance reads one): 1,000
    # each, 33 % of a partition
    assert result.head_item_rcu == 4_000
    assert result.top_reads_to_dynamodb == 4_000
    assert capacity.HEAD_COPIES == 4
    assert result.head_copy_rcu == 1_000
    assert not any("copies" in warning for warning in result.warnings)
    # The board's partition: the tops' board and count (1 RCU) once a second an instance,
    # 1,000 times a second, the ranks' board (1 RCU, read with the score) 200 times, every
    # instance's layout every 5 s: 1,440 RCU/s, 48 % of a partition, and no warning (read
    # with the head, as before the copies, it was 4,440: 148 %)
    assert result.board_partition_rcu == 1_000 * 1 + 200 * 1 + 1_200 / 5
    assert result.board_partition_rcu < capacity.SAFETY_FRACTION * capacity.PARTITION_RCU_PER_S
    assert not any("board's own items" in warning for warning in result.warnings)
    # The root 200 times a second; every rank still reads its score and the 4 nodes below
    assert result.tree_root_rcu == 200 * 0.5
    assert result.tree_partition_rcu == 10_000 * 4 * 0.5 + 100
    # Without the functions keeping them, the head alone would need 33 items' worth
    uncached = plan(
        Workload(
            writes_per_s=10,
            top_reads_per_s=100_000,
            rank_reads_per_s=10_000,
            members=1_000_000,
            k=100,
            read_cache_s=0,
        )
    )
    assert uncached.head_item_rcu == 100_000
    assert any("head's 4 copies" in warning for warning in uncached.warnings)


def test_the_planner_counts_the_head_copies_the_service_writes():
    # Given the planner's figure and the schema's
    # When / Then they are one number: the planner splits the head's reads over as many
    # copies as the aggregator writes and the readers pick from
    assert capacity.HEAD_COPIES == schema.HEAD_COPIES


def test_the_planner_keeps_the_head_as_long_as_the_service_does():
    # Given the planner's keep of the head in an instance and the service's (podium.recent)
    # When / Then they are one number: how many head reads reach DynamoDB follows from it
    assert capacity.HEAD_KEEP_SECONDS == recent.HEAD_KEEP_SECONDS


def test_storage_and_monthly_cost():
    # Given 1,000,000 members with 200 B of data:
    # profile 100 + 100 + 200, score 100 + 150, index entry 100 + 115 = 865 B
    result = plan(
        Workload(writes_per_s=100, top_reads_per_s=0, rank_reads_per_s=0, members=1_000_000), tree=SHAPE
    )
    assert result.bytes_per_member == 865
    assert result.storage_gb == pytest.approx(0.865)
    assert result.monthly_storage_cost == pytest.approx(0.865 * 0.25)
    # 100 updates/s: one stream shard, batches of 25 (a quarter second's). The tree (20 a
    # leaf, 36 children): 50,000 leaves, 1,389, 39, 2 and the root. 25 far moves write 50,000
    # (1 - (1 - 2/50,000)^25) = 50.0 leaves, 1,389 (1 - (1 - 1.9993/1,389)^25) = 49.1 nodes of
    # level 1, 39 (1 - (1 - 1.9744/39)^25) = 28.4 of level 2, both of level 3 and the root:
    # 130.5 node writes, 5.2185 WCU a move
    assert result.upkeep.batch_records == 25
    assert result.upkeep.tree_far_wcu == pytest.approx(5.2185, abs=0.001)
    # writes: table 100 * (1 + 5.2185 + 1) + four head writes a second (one shard's batches)
    # of 4 KB = 737.85, index 200 -> 937.85 WRU/s; x 2,628,000 s = 2,464.7 M WRU x $0.625 =
    # $1,540.4
    assert result.table_wcu == pytest.approx(737.85, abs=0.05)
    assert result.monthly_write_cost == pytest.approx(1_540.4, abs=0.1)
    assert result.monthly_read_cost == 0


def test_prices_can_be_overridden():
    workload = Workload(writes_per_s=100, top_reads_per_s=0, rank_reads_per_s=0, members=1_000_000)
    result = plan(workload, capacity.Prices(write_per_million=1.25), SHAPE)
    assert result.monthly_write_cost == pytest.approx(2 * 1_540.4, abs=0.2)


def test_the_api_cache_caps_top_reads_reaching_dynamodb():
    # Given 16,000 top reads/s over 10 cached pages with a 2 s TTL: 5 reads/s miss the cache
    def cached(read_cache_s: float) -> Workload:
        return Workload(
            writes_per_s=10,
            top_reads_per_s=16_000,
            rank_reads_per_s=0,
            members=100,
            k=100,
            cache_ttl_s=2,
            read_cache_s=read_cache_s,
        )

    result = plan(cached(0))
    assert result.top_reads_to_dynamodb == 5
    assert result.table_rcu == 10 + 1 / 5  # 5 * 2, and one instance's layout every 5 s
    assert result.monthly_cache_cost == pytest.approx(0.02 * 730)
    # and the one instance those 5 reads keep busy reads the head four times a second
    kept = plan(cached(capacity.READ_CACHE_SECONDS))
    assert kept.top_reads_to_dynamodb == 4


def test_event_log_ceiling_per_member():
    # Given 10,000 events/s on one member: 10,000 * 5 / 64 = 781 WCU/s a bucket, under 800
    fine = plan(
        Workload(writes_per_s=0, top_reads_per_s=0, rank_reads_per_s=0, members=1, events_per_s=10_000)
    )
    hot = plan(
        Workload(writes_per_s=0, top_reads_per_s=0, rank_reads_per_s=0, members=1, events_per_s=11_000)
    )
    assert fine.warnings == []
    assert fine.table_wcu == 70_000  # 7 WCU an event
    assert fine.index_wcu == 20_000  # 2 on LogIndex: the entry put, then removed by the fold
    assert fine.table_rcu == 10_000
    assert any("12,800" in warning for warning in hot.warnings)


def test_cli_prints_json(capsys):
    # When
    assert main(["--writes", "5000", "--reads", "20000", "--members", "1000000", "--k", "100", "--json"]) == 0

    # Then 20 % of the reads are ranks
    document = json.loads(capsys.readouterr().out)
    assert document["plan"]["shards"] == 13
    assert document["workload"]["rank_reads_per_s"] == 4_000
    assert document["prices"]["region"] == "us-east-1"


def test_updates_that_stay_in_their_leaf_write_less():
    # Given the same 5,000 updates/s, all far moves, all near moves, and half of each
    def table_wcu(near: float) -> float:
        workload = Workload(writes_per_s=5_000, top_reads_per_s=0, rank_reads_per_s=0, members=10**6)
        return plan(replace(workload, near_moves=near), tree=SHAPE).table_wcu

    # Then each update writes its score (1), the notifier's mark (1) and the count tree's
    # writes for its kind in batches of 250: 3.8382 far; near, its leaf alone, 50,000
    # (1 - (1 - 1/50,000)^250) / 250 = 0.9975 (a batch rarely has two in one leaf); a mix in
    # proportion (and the head's 20 writes of 4 KB a second)
    assert table_wcu(0) == pytest.approx(5_000 * (1 + FAR_AT_250 + 1) + 80, abs=0.5)
    assert table_wcu(1) == pytest.approx(5_000 * (1 + NEAR_AT_250 + 1) + 80, abs=0.5)
    assert table_wcu(0.5) == pytest.approx(5_000 * (1 + (FAR_AT_250 + NEAR_AT_250) / 2 + 1) + 80, abs=0.5)


def test_cli_takes_the_share_of_near_moves(capsys):
    args = ["--writes", "5000", "--members", "1000000", "--near-moves", "0.75", "--json"]
    assert main(args) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["workload"]["near_moves"] == 0.75
    # (the planner's layout, PLANNED_TREE, whatever it is: the command passes it on)
    far, near = capacity.tree_far_wcu(10**6, 250), capacity.tree_near_wcu(10**6, 250)
    tree = 0.75 * near + 0.25 * far
    assert document["plan"]["table_wcu"] == pytest.approx(5_000 * (1 + tree + 1) + 80, abs=0.5)
    assert main(["--writes", "5000", "--members", "10", "--near-moves", "1.5"]) != 0  # a share: 0 to 1


def test_cli_prints_a_table(capsys):
    assert main(["--writes", "50000", "--members", "10"]) == 0
    out = capsys.readouterr().out
    assert "shards (recommended)" in out
    assert "needs 125" in out  # 100,000 / 800


def test_when_to_re_shard_each_shards_index_writes_past_80_percent_of_a_partition():
    # Given a board on 3 shards: each takes 400 updates/s (800 index WCU/s) within 80%
    # Then up to 1,200 updates/s it stays; past that it should move to the fewest shards
    # whose partitions each stay within 80% of 1,000 WCU/s (a plain model: ceil(2u / 800))
    for updates in (0, 400, 1_200, 1_201, 5_000, 40_000, 40_001):
        fewest = max(1, -(-2 * updates // 800))
        expected = fewest if 3 < fewest <= 100 else None
        assert reshard_to(updates, 3) == expected, updates


def test_the_plan_of_a_board_past_its_shards_says_to_re_shard_and_to_how_many():
    # Given 5,000 updates/s on a board of 3 shards
    result = plan(Workload(writes_per_s=5_000, top_reads_per_s=0, rank_reads_per_s=0, members=10, shards=3))

    # Then it says to re-shard to 13 shards, with the command
    assert any("podium boards reshard BOARD --shards 13" in warning for warning in result.warnings)


def test_the_worked_example_s_reads_with_what_the_instances_keep():
    # Given docs/capacity.md's worked example: 16,000 top-100 reads and 4,000 ranks a second,
    # with the planner's own layout of the tree (PLANNED_TREE: when it changes, so do the
    # write figures here and on that page)
    result = plan(
        Workload(writes_per_s=5_000, top_reads_per_s=16_000, rank_reads_per_s=4_000, members=1_000_000, k=100)
    )
    # 160 + 80 instances; the board's items 160 x 1 (board and count, kept a second) + 80
    # + 240 / 5; the head 4 x 160 (kept a quarter second); the root 80 x 0.5
    assert result.read_instances == 240
    assert result.head_item_rcu == 640
    assert result.tree_root_rcu == 40
    # the head's 640 and the board's 288 fit one partition (928 of 2,400): the primary alone,
    # no copies, and the board's partition takes both
    assert result.upkeep.head_copies == 0
    assert result.board_partition_rcu == 288 + 640
    # the table: those, and every rank's score (1) and 4 nodes under the root (2)
    assert result.table_rcu == 288 + 640 + 40 + 4_000 * 3
    # and the writes: 5,000 changes/s on a streamed table of 5,000 WCU/s, 5 stream shards,
    # so batches of 250 records (a quarter second's, between Lambda's polls); each far move
    # touches 2 leaves and about 2 nodes a level above, up to the root: of 66,667 leaves a
    # batch writes 66,667 (1 - (1 - 2/66,667)^250) = 498.1, of 2,778 nodes 457.7, of 116
    # 114.5, then all 5 and 1: 1,076.3 writes of 1 WCU for 250 records, 4.305 WCU a record,
    # and the notifier's mark 1
    assert result.upkeep.batch_records == 250
    assert result.upkeep.tree_far_wcu == pytest.approx(4.305, abs=0.001)
    # so 5,000 x (1 + 4.305 + 1) = 31,525 WCU/s on the tables, the head's 20 writes a second
    # of 4 WCU, and 10,000 on the index: 41,605 WRU/s x 2,628,000 s = 109,339 M WRU x $0.625
    # = $68,337; reads of 12,968 RRU/s: $4,259.99 (730 hours at $0.125 a million), so
    # $72,597 a month with storage
    assert result.monthly_write_cost == pytest.approx(68_337, abs=1)
    assert result.monthly_read_cost == pytest.approx(12_968 * 3_600 * 730 / 1e6 * 0.125, abs=0.01)
    assert result.monthly_cost == pytest.approx(72_597, abs=1)
    # where keeping nothing read 50,000 RCU/s, 36,000 of them the board's items and the head
    cold = plan(
        Workload(
            writes_per_s=5_000,
            top_reads_per_s=16_000,
            rank_reads_per_s=4_000,
            members=1_000_000,
            k=100,
            read_cache_s=0,
        )
    )
    assert cold.table_rcu == 50_000 + 240 / 5
    # (the head's 16,000 of them on its copies)
    assert cold.board_partition_rcu == 20_000 + 240 / 5


def test_distinct_nodes_a_batch_writes():
    # One change touching one node of 10 writes 1; two changes over 4 nodes miss a given
    # node with the chance (3/4)^2, so 4 (1 - 9/16) = 1.75 distinct; a move's two leaves on a
    # tree of two leaves are both of them
    assert capacity.distinct_nodes(10, 1, 1) == pytest.approx(1)
    assert capacity.distinct_nodes(4, 1, 2) == pytest.approx(1.75)
    assert capacity.distinct_nodes(2, 2, 1) == 2
    assert capacity.distinct_nodes(1, 0.5, 3) == pytest.approx(1 - 0.5**3)
    assert capacity.distinct_nodes(0, 1, 5) == capacity.distinct_nodes(5, 1, 0) == 0


def test_a_far_move_writes_two_paths_up_to_where_they_meet():
    # Given the old layout's tree of 1,000,000 members: 55,556 leaves, 2,315, 97, 5, root
    levels = capacity.tree_levels(1_000_000, 18, 24)
    assert levels == [55_556, 2_315, 97, 5, 1]
    # Then one far move writes 2 leaves; on each level above, 2 nodes unless the paths met
    # below, and the node where they meet once: level 1, 2 - 1/2,315; level 3, 2 (1 - 1/5)
    # + (1/5 - 1/97); the root, 1 - 1/5 (the paths met below it one time in five)
    touches = capacity.far_touches(levels)
    assert touches[0] == 2
    assert touches[1] == pytest.approx(2 - 1 / 2_315)
    assert touches[3] == pytest.approx(2 * (1 - 1 / 5) + (1 / 5 - 1 / 97))
    assert touches[4] == pytest.approx(1 - 1 / 5)
    # Alone, at 2 WCU a node: 2 x (2 + 2.000 + 1.990 + 1.790 + 0.8) = 17.16 WCU
    assert capacity.tree_far_wcu(1_000_000, 1, capacity.OLD_TREE) == pytest.approx(17.16, abs=0.01)
    # A board that is one leaf: a move stays in it
    assert capacity.far_touches([1]) == [1.0]
    assert capacity.tree_far_wcu(10, 1, capacity.PLANNED_TREE) == pytest.approx(1)


def test_the_model_reproduces_what_bench_treewrites_measured_on_the_old_layout():
    # Given the layout `make bench-treewrites` measured on 2026-11-29 on 1,000,000 members:
    # leaves of about 18 entries and inner nodes of 24 children, 2 WCU a node write
    old = capacity.OLD_TREE
    assert (old.leaf_entries, old.children, old.node_wcu) == (18, 24, 2)
    # Then the model's far move is within 15 % of each measured batch size: 17.16 for 16.13
    # alone (+6 %), 9.64 for 9.58 in batches of 100, 6.81 for 6.83 in batches of 1,000
    for batch, measured in capacity.MEASURED_OLD_FAR_WCU.items():
        model = capacity.tree_far_wcu(1_000_000, batch, old)
        assert model == pytest.approx(measured, rel=0.15), batch
    assert capacity.tree_far_wcu(1_000_000, 100, old) == pytest.approx(9.64, abs=0.01)
    assert capacity.tree_far_wcu(1_000_000, 1_000, old) == pytest.approx(6.81, abs=0.01)
    # A near move rewrites its leaf alone: 2.0. The bench measured 2.50 to 2.56: its
    # population puts a tenth of the members on round scores, about 100 tied on each, and
    # one point up takes such a member past about 50 of them, into another leaf: two leaves
    # and their parent, 6 WCU. 0.9 x 2 + 0.1 x 6 = 2.4, within 15 % of every measurement
    assert capacity.tree_near_wcu(1_000_000, 1, old) == pytest.approx(2)
    leaf_only = capacity.tree_near_wcu(1_000_000, 100, old)
    assert leaf_only == pytest.approx(2, abs=0.01)
    bench_mix = 0.9 * leaf_only + 0.1 * 3 * old.node_wcu
    for measured in capacity.MEASURED_OLD_NEAR_WCU.values():
        assert bench_mix == pytest.approx(measured, rel=0.15)


def test_the_model_reproduces_what_bench_treewrites_measured_on_the_compact_layout():
    # Given the compact layout as built (leaves of 15, 24 children, 1 WCU a node write) and
    # what `make bench-treewrites` measured on it on 1,000,000 members
    planned = capacity.PLANNED_TREE
    assert (planned.leaf_entries, planned.children, planned.node_wcu) == (15, 24, 1)
    # Then the model's far move is within 15 % of each: 8.58 for 8.72 alone, 4.94 for 5.15
    # in batches of 100, 3.52 for 3.63 in batches of 1,000
    for batch, measured in capacity.MEASURED_FAR_WCU.items():
        assert capacity.tree_far_wcu(1_000_000, batch) == pytest.approx(measured, rel=0.15), batch
    # and its near move, the leaf alone (1), with the bench's tenth of members on tied round
    # scores that one point up takes into another leaf (two leaves and their parent, 3):
    # 0.9 x 1 + 0.1 x 3 = 1.2, within 15 % of the 1.27 to 1.32 measured
    bench_mix = 0.9 * capacity.tree_near_wcu(1_000_000, 100) + 0.1 * 3 * planned.node_wcu
    assert bench_mix == pytest.approx(1.2, abs=0.01)
    for measured in capacity.MEASURED_NEAR_WCU.values():
        assert bench_mix == pytest.approx(measured, rel=0.15)


def test_a_plan_takes_the_tree_s_layout_as_one_argument():
    # The layout is one value (PLANNED_TREE unless told another): the old one's plan
    result = plan(Workload(5_000, 0, 0, 1_000_000), tree=capacity.OLD_TREE)
    # with the old layout the reference's far change costs what the model gives it: 8.40
    assert result.upkeep.tree_far_wcu == pytest.approx(8.40, abs=0.01)


def test_the_stream_has_a_shard_a_partition_and_a_batch_is_what_one_gathers():
    # A partition takes 1,000 WCU/s; each score change writes 1 WCU to the streamed table
    assert capacity.stream_shards(0) == 1
    assert capacity.stream_shards(1_000) == 1
    assert capacity.stream_shards(5_000) == 5
    assert capacity.stream_shards(5_001) == 6
    # 5,000 changes a second on 5 shards: 1,000 a shard a second, 250 between two polls
    assert capacity.batch_records(5_000, 5_000, 5) == 250
    # 6,000 on 1 shard: 1,500 between two polls, the batch's most 1,000
    assert capacity.batch_records(6_000, 6_000, 1) == 1_000
    # a board with a tenth of a table's 1,000 a second on one shard: 25 of a batch's 250
    assert capacity.batch_records(100, 1_000, 1) == 25
    # a quiet board (0.03 a second of the table's 300): its record alone
    assert capacity.batch_records(0.03, 300, 1) == 1
    assert capacity.batch_records(0, 0, 1) == 1


def test_the_batch_settings_are_the_template_s():
    from devstack import template

    aggregator = next(c for c in template.read("").stream_consumers() if c.function == "AggregatorFunction")
    assert aggregator.batch_size == capacity.STREAM_BATCH_SIZE
    assert aggregator.batching_window == capacity.STREAM_BATCH_WINDOW_S


def test_a_board_s_head_is_as_small_as_its_entries_and_has_the_copies_its_reads_need():
    # 30 members: 30 keys x 18 B + 100 = 640 B, 1 WCU; 500: 128 keys and (500 - 128) // 16 =
    # 23 ladder samples, 2,818 B, 3 WCU; from 1,536 members on: 128 + 88 entries, 4 WCU
    assert capacity.head_item_wcu(30) == 1
    assert capacity.head_item_wcu(500) == 3
    assert capacity.head_item_wcu(1_000_000) == 4
    # every change rewrites a small board's head (it moves a key or a ladder count)
    assert capacity.head_change_fraction(1_000) == 1
    assert capacity.head_change_fraction(1_000_000) == capacity.HEAD_CHANGE_FRACTION
    # copies: none while the head and the board's items fit 80 % of one partition (2,400);
    # past that as many as keep each under half of it (1,200), at most 4
    assert capacity.head_copies(0.24, 0.5) == 0
    assert capacity.head_copies(640, 288) == 0
    assert capacity.head_copies(2_000, 500) == 2
    assert capacity.head_copies(4_000, 1_440) == 4
    assert capacity.head_copies(100_000, 0) == capacity.HEAD_COPIES


def test_cli_prints_the_unit_costs_and_both_workloads(capsys):
    assert main(["--writes", "5000", "--reads", "20000", "--members", "1000000", "--k", "100"]) == 0
    out = capsys.readouterr().out
    assert "a million far changes" in out
    assert "a million rank reads" in out
    assert main(["--writes", "5000", "--members", "10", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert set(document["unitCosts"]) == {"far_change", "near_change", "top_read", "rank_read"}
    assert main(["--compare"]) == 0
    out = capsys.readouterr().out
    assert "hot board" in out
    assert "quiet boards" in out
    assert "ElastiCache Serverless (Valkey)" in out
    assert main(["--compare", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert [w["name"] for w in document["workloads"]] == ["hot board", "quiet boards"]
    assert main(["--reads", "10"]) != 0  # a plan needs --writes and --members, or --compare


def test_cli_takes_the_tree_s_layout(capsys):
    # The old layout given on the command line: the reference's far move in batches of 250
    args = ["--writes", "5000", "--members", "1000000", "--json"]
    assert main([*args, "--leaf-entries", "18", "--children", "24", "--node-wcu", "2"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["tree"] == {"leaf_entries": 18, "children": 24, "node_wcu": 2}
    assert document["plan"]["upkeep"]["tree_far_wcu"] == pytest.approx(8.40, abs=0.01)


def test_the_model_s_levels_are_the_measured_breakdown():
    # Given the old layout's far moves on 1,000,000 members in batches of 100: make
    # bench-treewrites' 9.58 WCU a record split as two leaves 4.0, level 1 3.85, level 2
    # 1.68 and the rest 0.1 (issue 25)
    old = capacity.OLD_TREE
    levels = capacity.tree_levels(1_000_000, old.leaf_entries, old.children)
    touches = capacity.far_touches(levels)
    per_level = [
        capacity.distinct_nodes(n, t, 100) / 100 * old.node_wcu for n, t in zip(levels, touches, strict=True)
    ]
    # Then the model's levels: 3.99, 3.83, 1.70 and 0.12 above
    assert per_level[:3] == pytest.approx([3.99, 3.83, 1.70], abs=0.01)
    assert sum(per_level[3:]) == pytest.approx(0.12, abs=0.01)
    for model, measured in zip(per_level[:3], (4.0, 3.85, 1.68), strict=True):
        assert model == pytest.approx(measured, abs=0.05)


def test_the_planner_s_head_is_the_service_s():
    # The keys a head holds and how far its ladder reaches: the head's size and whether a
    # change on a small board rewrites it follow from them
    from podium import head

    assert capacity.HEAD_KEYS == head.CAPACITY
    assert capacity.HEAD_LADDER_REACH == head.LADDER_REACH
    assert capacity.LADDER_STEP == head.LADDER_STEP
