"""bench/treewrites.py (`make bench-treewrites`, what the planner's model of the count
tree's writes reproduces: planner.capacity.MEASURED_OLD_FAR_WCU) on a small board: every
score change reaches the consumer once, a move far costs more than a move near, and the
board checks out afterwards."""

from __future__ import annotations

from bench import treewrites


def test_the_tree_writes_bench_measures_far_and_near_moves_and_leaves_the_board_consistent() -> None:
    # Given a board of 3,000 members, 60 changes of each kind, applied alone and in one batch
    result = treewrites.measure(members=3_000, count=60, batches=[1, 60])

    # Then each run handed the consumer the 60 records of its changes, no more
    runs = {(run["batch"], run["kind"]): run for run in result["runs"]}
    assert sorted(runs) == [(1, "far"), (1, "near"), (60, "far"), (60, "near")]
    assert all(run["records"] == 60 for run in runs.values())
    # and a member moved far wrote two leaves and reports (2 KB items: 2 WCU each), more
    # than one moved a point up, which rewrote its one leaf
    for batch in (1, 60):
        assert runs[(batch, "far")]["wcuPerRecord"] > runs[(batch, "near")]["wcuPerRecord"] >= 1
    assert runs[(1, "far")]["wcuPerRecord"] >= 4
    # and a batch shares what records alone each pay for
    assert runs[(60, "far")]["wcuPerRecord"] < runs[(1, "far")]["wcuPerRecord"]
    # and the count tree, the head and the index agree afterwards
    assert result["consistent"], result["differences"]
