"""planner.bill: the whole monthly bill, front door, Lambda, data out and DynamoDB, from
published prices (checked here against the arithmetic done by hand)."""

from __future__ import annotations

import pytest

from planner import bill, capacity
from planner.capacity import Workload, plan

# The reference workload: 5,000 updates and 20,000 reads (a fifth of them ranks) a
# second on 1,000,000 members, top pages of 100.
REFERENCE = Workload(
    writes_per_s=5_000, top_reads_per_s=16_000, rank_reads_per_s=4_000, members=1_000_000, k=100
)
MONTH = capacity.SECONDS_PER_MONTH


def test_tiers_price_each_part_at_its_own_rate() -> None:
    tiers = ((10.0, 2.0), (30.0, 1.0), (float("inf"), 0.5))
    assert bill.tiered(0, tiers) == 0
    assert bill.tiered(5, tiers) == 10
    assert bill.tiered(30, tiers) == 10 * 2 + 20 * 1
    assert bill.tiered(50, tiers) == 20 + 20 + 20 * 0.5


def test_the_reference_workload_s_front_doors_side_by_side() -> None:
    result = bill.bill(REFERENCE, plan(REFERENCE))
    requests = 25_000 * MONTH  # 65.7 billion
    assert result.requests_per_month == requests
    millions = requests / 1e6
    rest = 333 * 3.50 + 667 * 2.80 + 19_000 * 2.38 + (millions - 20_000) * 1.51
    http = 300 * 1.00 + (millions - 300) * 0.90
    assert result.front("REST API").monthly == pytest.approx(rest)
    assert result.front("HTTP API").monthly == pytest.approx(http)
    # At this volume REST costs about twice what HTTP does, and an ALB a fraction of either
    assert 1.9 < rest / http < 2.1
    assert result.front("ALB").monthly < http / 5


def test_an_alb_is_billed_by_its_busiest_dimension() -> None:
    # 1,000 small reads a second (k = 10): new connections (100/s -> 4 LCU) outweigh the
    # bytes processed (about 1.7 MB/s -> 15 GB/h -> ... LCU) only when the responses are small
    small = Workload(writes_per_s=0, top_reads_per_s=1_000, rank_reads_per_s=0, members=1_000, k=1)
    result = bill.bill(small, plan(small))
    processed_gb_h = (
        1_000 * (bill.RESPONSE_ENVELOPE_BYTES + bill.ENTRY_BYTES + bill.REQUEST_BYTES) * 3_600 / 2**30
    )
    lcus = max(1_000 * 0.1 / 25, processed_gb_h / 0.4, 1_000 * 10 / 1_000)
    assert result.front("ALB").monthly == pytest.approx((0.0225 + lcus * 0.008) * 730)


def test_provisioned_capacity_with_auto_scaling_and_when_it_pays() -> None:
    result = bill.bill(REFERENCE, plan(REFERENCE))
    p = plan(REFERENCE)
    units = ((p.table_wcu + p.index_wcu) * 0.00065 + (p.table_rcu + p.index_rcu) * 0.00013) / 0.7 * 730
    assert result.dynamodb_provisioned == pytest.approx(units + p.monthly_storage_cost)
    # A steady load costs about 41 % of on demand provisioned at 70 %: below that share of
    # its peak, a load provisioned for its peak costs more than on demand
    assert 0.40 < result.provisioned_break_even < 0.42


def test_the_whole_bill_adds_every_line() -> None:
    result = bill.bill(REFERENCE, plan(REFERENCE))
    for front in ("REST API", "HTTP API", "ALB"):
        assert result.total(front) == pytest.approx(
            result.front(front).monthly
            + result.lambda_monthly
            + result.egress_monthly
            + result.dynamodb_on_demand
        )
    # Lambda: requests at $0.20 a million and 512 MB for the estimated milliseconds
    ms = 16_000 * 10 + 4_000 * 20 + 5_000 * (25 + 2 * 2)
    gb_seconds = ms / 1000 * 0.5 * MONTH
    assert result.lambda_monthly == pytest.approx(
        25_000 * MONTH / 1e6 * 0.20 + bill.tiered(gb_seconds, bill.LAMBDA_GB_SECOND_TIERS)
    )


def test_unit_costs_are_a_change_s_writes_and_a_read_s_units_at_the_prices() -> None:
    # Given the reference on the compact layout of 20 a leaf and 36 children
    shape = capacity.TreeShape(leaf_entries=20, children=36, node_wcu=1)
    p = plan(REFERENCE, tree=shape)
    # A far change writes its item (1), the index (2), the count tree in batches of 250
    # (3.8382: tests/unit/test_plan.py works it out), the notifier's mark (1) and its share
    # of the head's 20 writes a second of 4 KB to the primary alone (80 / 5,000 = 0.016)
    assert p.far_change_wcu == pytest.approx(1 + 2 + 3.8382 + 1 + 0.016, abs=0.0001)
    # a near change the same with its leaf alone (0.9975) for the tree
    assert p.near_change_wcu == pytest.approx(1 + 2 + 0.9975 + 1 + 0.016, abs=0.001)
    # a top read: 832 RCU/s for 16,000 (the board and count once a second in each of 160
    # instances, the head four times, the layout every 5 s): 0.052 each; a rank: the 80
    # instances' board and root (120), every rank's score and 4 nodes (12,000), the
    # layouts (16): 12,136 RCU/s for 4,000, 3.034 each
    assert p.top_read_rcu == pytest.approx((160 + 640 + 32) / 16_000)
    assert p.rank_read_rcu == pytest.approx((80 * 1.5 + 4_000 * 3 + 16) / 4_000)
    units = bill.unit_costs(p)
    # Then a million far changes: 7.8542 M WRU x $0.625 = $4.9089 on demand; provisioned at
    # 70 %, a WCU-second costs $0.00065 / 3,600 / 0.7, so a million $0.25794: $2.0259
    assert units.far_change.on_demand == pytest.approx(7.8542 * 0.625, abs=0.0001)
    a_million_wcu = bill.PROVISIONED_WCU_PER_MILLION
    assert a_million_wcu == pytest.approx(0.25794, abs=0.00001)
    assert units.far_change.provisioned == pytest.approx(7.8542 * 0.25794, abs=0.0001)
    assert units.near_change.on_demand == pytest.approx(5.0135 * 0.625, abs=0.001)
    # a million ranks: 3.034 M RRU x $0.125 = $0.379; provisioned $0.00013 / 3,600 / 0.7 a
    # second, $0.05159 a million: $0.1565
    assert units.rank_read.on_demand == pytest.approx(3.034 * 0.125)
    assert units.rank_read.provisioned == pytest.approx(3.034 * 0.051587, abs=0.0001)
    assert units.top_read.on_demand == pytest.approx(0.052 * 0.125)
