"""Two workloads side by side, each against a Redis sorted set in ElastiCache: the hot board
(one board, a cache cluster's best case) and many quiet boards (``fleet.QUIET_BOARDS``).

For each: DynamoDB's month on demand and provisioned, the unit costs, the node cluster and
ElastiCache Serverless (Valkey) for the same commands, and the break-even rates below
which Podium's DynamoDB costs less than each (reads scaled with the writes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from planner import alternatives, bill, capacity, fleet
from planner.capacity import PLANNED_TREE, Prices, TreeShape, Workload

# The reference workload: 1,000,000 members, 5,000 changes and 20,000 reads a second
# (a fifth of them ranks), top pages of 100: `make plan`.
HOT_BOARD = Workload(
    writes_per_s=5_000, top_reads_per_s=16_000, rank_reads_per_s=4_000, members=1_000_000, k=100
)


@dataclass(frozen=True)
class BreakEven:
    """Changes a second below which Podium's DynamoDB costs less than the alternative."""

    on_demand: float
    provisioned: float


@dataclass(frozen=True)
class BoardFigures:
    """One size of board in a workload: how many, and what one change and one read cost."""

    members: int
    boards: int
    batch_records: float
    head_copies: int
    tree_far_wcu: float  # the count tree's share of a far change
    tree_near_wcu: float
    far_change_wcu: float
    top_read_rcu: float
    rank_read_rcu: float

    @classmethod
    def of(cls, boards: int, p: capacity.Plan, members: int) -> BoardFigures:
        u = p.upkeep
        return cls(
            members,
            boards,
            u.batch_records,
            u.head_copies,
            u.tree_far_wcu,
            u.tree_near_wcu,
            p.far_change_wcu,
            p.top_read_rcu,
            p.rank_read_rcu,
        )


@dataclass(frozen=True)
class Side:
    """One workload: what Podium's DynamoDB and the two alternatives cost it a month."""

    name: str
    label: str
    writes_per_s: float
    reads_per_s: float
    dynamodb_on_demand: float
    dynamodb_provisioned: float
    unit_costs: bill.UnitCosts
    node_cluster: float
    serverless: float
    versus_node_cluster: BreakEven
    versus_serverless: BreakEven
    boards: list[BoardFigures]

    @property
    def verdict(self) -> str:
        """Plainly, which is cheaper here and by how much."""
        if self.dynamodb_on_demand < min(self.node_cluster, self.serverless):
            return "Podium's DynamoDB on demand costs less than either cache"
        return (
            f"Podium's DynamoDB on demand costs {self.dynamodb_on_demand / self.node_cluster:,.0f} "
            f"times the node cluster and {self.dynamodb_on_demand / self.serverless:,.0f} times "
            "Serverless: a cache is cheaper at these rates"
        )


def scaled(w: Workload, writes_per_s: float) -> Workload:
    """The same board at another write rate, its reads in the same proportion."""
    ratio = writes_per_s / w.writes_per_s if w.writes_per_s else 0.0
    return replace(
        w,
        writes_per_s=writes_per_s,
        top_reads_per_s=w.top_reads_per_s * ratio,
        rank_reads_per_s=w.rank_reads_per_s * ratio,
    )


def board_bill(w: Workload, prices: Prices, tree: TreeShape) -> bill.Bill:
    return bill.bill(w, capacity.plan(w, prices, tree), prices)


def fleet_bill(f: fleet.Fleet, prices: Prices, tree: TreeShape) -> bill.Bill:
    return bill.bill(f.totals(), fleet.plan_fleet(f, prices, tree), prices)


def board_commands(w: Workload) -> alternatives.Commands:
    return alternatives.Commands(
        w.writes_per_s, w.top_reads_per_s, w.rank_reads_per_s, min(w.k, w.members), w.members
    )


def fleet_commands(f: fleet.Fleet) -> alternatives.Commands:
    """The fleet's commands; a top page holds k entries or the mean board's members."""
    t = f.totals()
    entries = min(f.k, t.members // f.boards)
    return alternatives.Commands(t.writes_per_s, t.top_reads_per_s, t.rank_reads_per_s, entries, t.members)


def break_evens(dynamodb: Callable[[float], bill.Bill], other: Callable[[float], float]) -> BreakEven:
    """The break-even rate of Podium on demand and provisioned against ``other``."""
    return BreakEven(
        on_demand=alternatives.break_even(lambda r: dynamodb(r).dynamodb_on_demand, other),
        provisioned=alternatives.break_even(lambda r: dynamodb(r).dynamodb_provisioned, other),
    )


def side(
    name: str,
    label: str,
    writes_per_s: float,
    dynamodb: Callable[[float], bill.Bill],
    load: bill.Load,
    commands: Callable[[float], alternatives.Commands],
    prices: Prices,
    boards: list[BoardFigures],
) -> Side:
    """One workload at ``writes_per_s``: ``dynamodb(rate)`` and ``commands(rate)`` give its
    bill and its Redis commands at any write rate (reads in proportion)."""
    here = dynamodb(writes_per_s)
    c = commands(writes_per_s)
    return Side(
        name=name,
        label=label,
        writes_per_s=writes_per_s,
        reads_per_s=c.top_reads_per_s + c.rank_reads_per_s,
        dynamodb_on_demand=here.dynamodb_on_demand,
        dynamodb_provisioned=here.dynamodb_provisioned,
        unit_costs=bill.unit_costs(load, prices),
        node_cluster=alternatives.node_cluster_monthly(),
        serverless=alternatives.serverless_monthly(c),
        versus_node_cluster=break_evens(dynamodb, lambda _: alternatives.node_cluster_monthly()),
        versus_serverless=break_evens(dynamodb, lambda r: alternatives.serverless_monthly(commands(r))),
        boards=boards,
    )


def hot_side(w: Workload, prices: Prices, tree: TreeShape) -> Side:
    p = capacity.plan(w, prices, tree)
    return side(
        "hot board",
        f"one board of {w.members:,} members: the case where a cache cluster is far cheaper",
        w.writes_per_s,
        lambda r: board_bill(scaled(w, r), prices, tree),
        p,
        lambda r: board_commands(scaled(w, r)),
        prices,
        [BoardFigures.of(1, p, w.members)],
    )


def quiet_side(f: fleet.Fleet, prices: Prices, tree: TreeShape) -> Side:
    planned = fleet.plan_fleet(f, prices, tree)
    return side(
        "quiet boards",
        f"{f.boards:,} boards of {f.smallest:,} to {f.largest:,} members, each its own rates",
        f.writes_per_s,
        lambda r: fleet_bill(f.scaled(r), prices, tree),
        planned,
        lambda r: fleet_commands(f.scaled(r)),
        prices,
        [BoardFigures.of(n, p, m) for (n, p), m in zip(planned.classes, f.sizes(), strict=True)],
    )


def compare(
    hot: Workload = HOT_BOARD,
    quiet: fleet.Fleet = fleet.QUIET_BOARDS,
    prices: Prices | None = None,
    tree: TreeShape = PLANNED_TREE,
) -> list[Side]:
    """Both workloads, the hot board first."""
    prices = prices or Prices()
    return [hot_side(hot, prices, tree), quiet_side(quiet, prices, tree)]
