"""The whole monthly bill of a board's traffic, not DynamoDB alone: the front door
(API Gateway's REST API, its HTTP API, or an Application Load Balancer), Lambda, the data
sent to the internet, and DynamoDB on demand or provisioned with auto scaling.

Pure arithmetic over a :class:`planner.capacity.Plan`; the prices are AWS's published
list prices for us-east-1 as recorded on ``PRICE_DATE`` (docs/capacity.md, "The whole
bill", says where each comes from). Check the pricing pages before a decision rests on them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from planner import capacity
from planner.capacity import Prices, Workload

PRICE_DATE = "2026-11-25"
HOURS_PER_MONTH = 730

# -- API Gateway, per million requests, by the month's volume (tiers: up to, price) -----
REST_API_TIERS = ((333e6, 3.50), (1e9, 2.80), (20e9, 2.38), (math.inf, 1.51))
HTTP_API_TIERS = ((300e6, 1.00), (math.inf, 0.90))
# -- Application Load Balancer: an hour, and an LCU-hour of its busiest dimension ---------
ALB_HOUR = 0.0225
ALB_LCU_HOUR = 0.008
LCU_NEW_CONNECTIONS_PER_S = 25
LCU_LAMBDA_GB_PER_HOUR = 0.4  # processed bytes, for Lambda targets
LCU_RULE_EVALUATIONS_PER_S = 1_000  # past the first 10 rules (Podium's routes need about 20)
ALB_RULES = 20
# estimate: of the requests, the share that opens a connection (game servers keep theirs
# alive; browsers and phones open one a session)
NEW_CONNECTION_SHARE = 0.1
# -- Lambda, arm64 (the template's Architectures) ----------------------------------------
LAMBDA_REQUEST_PER_MILLION = 0.20
LAMBDA_GB_SECOND_TIERS = ((7.5e9, 0.0000133334), (18.75e9, 0.0000120001), (math.inf, 0.0000106667))
LAMBDA_MEMORY_GB = 0.5  # the template's MemorySize: 512
# -- Data sent to the internet, per GB, by the month's volume ------------------------------
EGRESS_TIERS = ((10_240, 0.09), (51_200, 0.085), (153_600, 0.07), (math.inf, 0.05))
# estimate: a response's bytes as JSON (an entry of a top page is about 60 B with a
# 16-character member id), and a request's (headers, token)
ENTRY_BYTES = 60
RESPONSE_ENVELOPE_BYTES = 200
RANK_RESPONSE_BYTES = 150
WRITE_RESPONSE_BYTES = 250
REQUEST_BYTES = 1_200
# -- DynamoDB provisioned capacity, per unit-hour, Standard table class --------------------
WCU_HOUR = 0.00065
RCU_HOUR = 0.00013
AUTOSCALING_TARGET = 0.7  # auto scaling's target utilisation: it provisions the load / 0.7
# A unit consumed each second for a month, provisioned at the target, costs the unit-hours of
# the month / 0.7: per million units consumed, the hour's price / 3,600 / 0.7 x 10^6.
PROVISIONED_WCU_PER_MILLION = WCU_HOUR / 3_600 / AUTOSCALING_TARGET * 1e6
PROVISIONED_RCU_PER_MILLION = RCU_HOUR / 3_600 / AUTOSCALING_TARGET * 1e6
# -- Per-caller limits (CallerRateLimit > 0): an AWS WAF web ACL on the REST API's stage, ----
# its prices with the overridable ones (capacity.Prices): its rules, one rate-based rule
# keyed on the Authorization header and one on the address of callers without it
CALLER_LIMIT_RULES = 2


class Load(Protocol):
    """What the bill reads of a plan: one board's (``capacity.Plan``) or many boards'
    (``fleet.FleetPlan``)."""

    @property
    def table_wcu(self) -> float: ...
    @property
    def index_wcu(self) -> float: ...
    @property
    def table_rcu(self) -> float: ...
    @property
    def index_rcu(self) -> float: ...
    @property
    def monthly_write_cost(self) -> float: ...
    @property
    def monthly_read_cost(self) -> float: ...
    @property
    def monthly_storage_cost(self) -> float: ...
    @property
    def far_change_wcu(self) -> float: ...
    @property
    def near_change_wcu(self) -> float: ...
    @property
    def top_read_rcu(self) -> float: ...
    @property
    def rank_read_rcu(self) -> float: ...


def tiered(amount: float, tiers: Sequence[tuple[float, float]], unit: float = 1.0) -> float:
    """The price of ``amount`` (in ``unit``s) over cumulative tiers of (up to, price a unit)."""
    cost, floor = 0.0, 0.0
    for ceiling, price in tiers:
        if amount <= floor:
            break
        cost += (min(amount, ceiling) - floor) / unit * price
        floor = ceiling
    return cost


@dataclass(frozen=True)
class Front:
    """What stands between the internet and the functions, for this traffic, a month."""

    name: str
    monthly: float
    note: str


@dataclass(frozen=True)
class Bill:
    requests_per_month: float
    fronts: list[Front]
    lambda_monthly: float
    egress_monthly: float
    egress_gb: float
    dynamodb_on_demand: float  # requests and storage, as Plan has them (no API cache)
    dynamodb_provisioned: float  # the same load provisioned at AUTOSCALING_TARGET, and storage
    provisioned_break_even: float  # provisioned is cheaper while average load / peak exceeds this
    # the WAF web ACL of CallerRateLimit, when it is switched on (off by default: not in a total)
    caller_limits_monthly: float = 0.0

    def front(self, name: str) -> Front:
        return next(f for f in self.fronts if f.name == name)

    def total(self, front: str, *, provisioned: bool = False) -> float:
        dynamodb = self.dynamodb_provisioned if provisioned else self.dynamodb_on_demand
        return self.front(front).monthly + self.lambda_monthly + self.egress_monthly + dynamodb


def response_bytes(w: Workload) -> float:
    """The bytes a second the API answers with."""
    top = RESPONSE_ENVELOPE_BYTES + w.k * ENTRY_BYTES
    return (
        w.top_reads_per_s * top
        + w.rank_reads_per_s * RANK_RESPONSE_BYTES
        + (w.writes_per_s + w.events_per_s) * WRITE_RESPONSE_BYTES
    )


def caller_limits(requests_per_month: float, prices: Prices) -> float:
    """The WAF web ACL of CallerRateLimit a month: itself, its rules, every request it inspects."""
    return (
        prices.waf_web_acl_per_month
        + CALLER_LIMIT_RULES * prices.waf_rule_per_month
        + requests_per_month / 1e6 * prices.waf_per_million_requests
    )


def bill(w: Workload, p: Load, prices: Prices | None = None) -> Bill:
    seconds = capacity.SECONDS_PER_MONTH
    per_s = w.top_reads_per_s + w.rank_reads_per_s + w.writes_per_s + w.events_per_s
    requests = per_s * seconds
    out_bytes = response_bytes(w)
    egress_gb = out_bytes * seconds / 2**30
    processed_gb_per_hour = (out_bytes + per_s * REQUEST_BYTES) * 3_600 / 2**30
    lcus = max(
        per_s * NEW_CONNECTION_SHARE / LCU_NEW_CONNECTIONS_PER_S,
        processed_gb_per_hour / LCU_LAMBDA_GB_PER_HOUR,
        per_s * (ALB_RULES - 10) / LCU_RULE_EVALUATIONS_PER_S,
    )
    fronts = [
        Front("REST API", tiered(requests, REST_API_TIERS, 1e6), "API Gateway REST API (the template's)"),
        Front("HTTP API", tiered(requests, HTTP_API_TIERS, 1e6), "API Gateway HTTP API"),
        Front(
            "ALB",
            (ALB_HOUR + lcus * ALB_LCU_HOUR) * HOURS_PER_MONTH,
            f"Application Load Balancer, {lcus:,.0f} LCU (processed bytes)",
        ),
    ]
    milliseconds = (
        w.top_reads_per_s * capacity.TOP_READ_MS
        + w.rank_reads_per_s * capacity.RANK_READ_MS
        + (w.writes_per_s + w.events_per_s) * (capacity.WRITE_MS + 2 * capacity.STREAM_MS_PER_UPDATE)
    )
    gb_seconds = milliseconds / 1000 * LAMBDA_MEMORY_GB * seconds
    lambda_monthly = requests / 1e6 * LAMBDA_REQUEST_PER_MILLION + tiered(gb_seconds, LAMBDA_GB_SECOND_TIERS)
    wcu, rcu = p.table_wcu + p.index_wcu, p.table_rcu + p.index_rcu
    provisioned = (wcu * WCU_HOUR + rcu * RCU_HOUR) / AUTOSCALING_TARGET * HOURS_PER_MONTH
    on_demand_requests = p.monthly_write_cost + p.monthly_read_cost
    return Bill(
        requests_per_month=requests,
        fronts=fronts,
        lambda_monthly=lambda_monthly,
        egress_monthly=tiered(egress_gb, EGRESS_TIERS),
        egress_gb=egress_gb,
        dynamodb_on_demand=on_demand_requests + p.monthly_storage_cost,
        dynamodb_provisioned=provisioned + p.monthly_storage_cost,
        provisioned_break_even=provisioned / on_demand_requests if on_demand_requests else 0.0,
        caller_limits_monthly=caller_limits(requests, prices or Prices()),
    )


@dataclass(frozen=True)
class UnitCost:
    """Dollars a million of something, DynamoDB's part, both ways it is billed."""

    on_demand: float
    provisioned: float  # at AUTOSCALING_TARGET, for a steady load


@dataclass(frozen=True)
class UnitCosts:
    """What a million score changes and a million reads cost in DynamoDB: every write of a
    change (item, index, the consumers at the batches the stream delivers, its share of the
    head's), and a read's units with what the instances keep."""

    far_change: UnitCost
    near_change: UnitCost
    top_read: UnitCost
    rank_read: UnitCost


def unit_costs(p: Load, prices: Prices | None = None) -> UnitCosts:
    """A million of each at the plan's units apiece: WCU at the write price (on demand) or
    at PROVISIONED_WCU_PER_MILLION, RCU likewise."""
    prices = prices or Prices()

    def writes(wcu: float) -> UnitCost:
        return UnitCost(wcu * prices.write_per_million, wcu * PROVISIONED_WCU_PER_MILLION)

    def reads(rcu: float) -> UnitCost:
        return UnitCost(rcu * prices.read_per_million, rcu * PROVISIONED_RCU_PER_MILLION)

    return UnitCosts(
        far_change=writes(p.far_change_wcu),
        near_change=writes(p.near_change_wcu),
        top_read=reads(p.top_read_rcu),
        rank_read=reads(p.rank_read_rcu),
    )
