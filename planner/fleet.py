"""Many boards on one table: each planned with its own rates and size, their stream's shards
and instances shared (``planner.capacity.plan`` per board), the month added up.

The quiet-boards shape (``QUIET_BOARDS``) is the one where a service billed per request
should do best against a cache cluster billed per hour: thousands of small boards (per
level, per region, per week), each read and written a few times a minute.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from planner import capacity
from planner.capacity import PLANNED_TREE, Plan, Prices, TreeShape, Workload

SIZE_CLASSES = 5  # the boards' sizes, spread evenly from the smallest to the largest


@dataclass(frozen=True)
class Fleet:
    """Boards alike but for their size, which is spread evenly from ``smallest`` to
    ``largest`` members; the rates are the fleet's, shared evenly among the boards."""

    boards: int
    smallest: int
    largest: int
    writes_per_s: float
    reads_per_s: float
    rank_fraction: float = 0.2  # of the reads, the ranks; the rest are top reads
    k: int = 10
    near_moves: float = 0.0

    def scaled(self, writes_per_s: float) -> Fleet:
        """The same fleet at another write rate, its reads in the same proportion."""
        ratio = writes_per_s / self.writes_per_s if self.writes_per_s else 0.0
        return replace(self, writes_per_s=writes_per_s, reads_per_s=self.reads_per_s * ratio)

    def sizes(self) -> list[int]:
        """The members of each size class's boards."""
        if SIZE_CLASSES == 1 or self.smallest == self.largest:
            return [self.largest]
        step = (self.largest - self.smallest) / (SIZE_CLASSES - 1)
        return [round(self.smallest + step * i) for i in range(SIZE_CLASSES)]

    def totals(self) -> Workload:
        """The fleet as one workload: every rate in all, its members together (what the
        front door, Lambda and data out are billed on)."""
        members = sum(self.sizes()) * self.boards // SIZE_CLASSES
        ranks = self.reads_per_s * self.rank_fraction
        return Workload(
            writes_per_s=self.writes_per_s,
            top_reads_per_s=self.reads_per_s - ranks,
            rank_reads_per_s=ranks,
            members=members,
            k=self.k,
            near_moves=self.near_moves,
        )


# The quiet boards: 10,000 boards of 30 to 1,000 members, 300 changes and 3,000 reads
# a second in all (a board 0.03 changes and 0.3 reads a second), top pages of 10.
QUIET_BOARDS = Fleet(boards=10_000, smallest=30, largest=1_000, writes_per_s=300, reads_per_s=3_000)


@dataclass(frozen=True)
class FleetPlan:
    """The fleet's month: each size class's plan of one board and how many boards it has, and
    the sums the bill and the unit costs read (the names of ``capacity.Plan``'s)."""

    classes: list[tuple[int, Plan]]  # (boards, the plan of one of them)
    table_wcu: float
    index_wcu: float
    table_rcu: float
    index_rcu: float
    storage_gb: float
    monthly_write_cost: float
    monthly_read_cost: float
    monthly_storage_cost: float
    far_change_wcu: float  # the mean over the fleet's changes
    near_change_wcu: float
    top_read_rcu: float  # the mean over the fleet's top reads
    rank_read_rcu: float

    @property
    def monthly_cost(self) -> float:
        return self.monthly_write_cost + self.monthly_read_cost + self.monthly_storage_cost


def board_workload(fleet: Fleet, members: int) -> Workload:
    """One board of the fleet: its share of the rates, the table's whole write rate (which
    sets the stream's shards) and the instances all the fleet's reads keep busy (which a
    quiet board's reads land on at random, so they rarely find its items kept)."""
    totals = fleet.totals()
    busy = capacity.instances(totals.top_reads_per_s, capacity.TOP_READ_MS) + capacity.instances(
        totals.rank_reads_per_s, capacity.RANK_READ_MS
    )
    return Workload(
        writes_per_s=fleet.writes_per_s / fleet.boards,
        top_reads_per_s=totals.top_reads_per_s / fleet.boards,
        rank_reads_per_s=totals.rank_reads_per_s / fleet.boards,
        members=members,
        k=fleet.k,
        near_moves=fleet.near_moves,
        table_writes_per_s=fleet.writes_per_s,
        instances=busy,
    )


def plan_fleet(fleet: Fleet, prices: Prices | None = None, tree: TreeShape = PLANNED_TREE) -> FleetPlan:
    """Every size class's board planned on its own, the fleet the sum of its boards."""
    each = fleet.boards / SIZE_CLASSES
    classes = [(round(each), capacity.plan(board_workload(fleet, m), prices, tree)) for m in fleet.sizes()]

    def total(name: str) -> float:
        return sum(float(getattr(p, name)) * each for _, p in classes)

    def mean(name: str) -> float:
        return sum(float(getattr(p, name)) for _, p in classes) / len(classes)

    return FleetPlan(
        classes=classes,
        table_wcu=total("table_wcu"),
        index_wcu=total("index_wcu"),
        table_rcu=total("table_rcu"),
        index_rcu=total("index_rcu"),
        storage_gb=total("storage_gb"),
        monthly_write_cost=total("monthly_write_cost"),
        monthly_read_cost=total("monthly_read_cost"),
        monthly_storage_cost=total("monthly_storage_cost"),
        far_change_wcu=mean("far_change_wcu"),
        near_change_wcu=mean("near_change_wcu"),
        top_read_rcu=mean("top_read_rcu"),
        rank_read_rcu=mean("rank_read_rcu"),
    )
