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
