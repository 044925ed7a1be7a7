"""The capacity plan as a person reads it (a table) and as a program does (JSON); ``podium
plan`` prints one or the other (cli/podium_cli/plan.py)."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from planner import alternatives, capacity
from planner import bill as bills
from planner.capacity import PLANNED_TREE, Plan, Prices, TreeShape, Workload
from planner.compare import Side


def as_json(
    workload: Workload, prices: Prices, result: Plan, tree: TreeShape = PLANNED_TREE
) -> dict[str, Any]:
    whole = bills.bill(workload, result, prices)
    return {
        "workload": asdict(workload),
        "tree": asdict(tree),
        "unitCosts": asdict(bills.unit_costs(result, prices)),
        "prices": {**asdict(prices), "region": capacity.PRICE_REGION, "asOf": capacity.PRICE_DATE},
        "plan": {**asdict(result), "monthly_cost": result.monthly_cost},
        "bill": {
            **asdict(whole),
            "asOf": bills.PRICE_DATE,
            "totals": {
                f.name: {
                    "onDemand": whole.total(f.name),
                    "provisioned": whole.total(f.name, provisioned=True),
                }
                for f in whole.fronts
            },
        },
    }


def render_bill(workload: Workload, result: Plan, prices: Prices | None = None) -> list[str]:
    """The whole month: the front door side by side, Lambda, data out, DynamoDB both ways,
    and what the per-caller limits would add."""
    b = bills.bill(workload, result, prices)
    rows: list[tuple[str, str]] = [
        ("requests a month", f"{b.requests_per_month / 1e9:,.2f} billion"),
        *((f"{f.name}", f"${f.monthly:,.2f} a month ({f.note})") for f in b.fronts),
        ("Lambda (arm64, 512 MB)", f"${b.lambda_monthly:,.2f} a month"),
        ("data out to the internet", f"${b.egress_monthly:,.2f} a month ({b.egress_gb / 1024:,.1f} TB)"),
        ("DynamoDB on demand", f"${b.dynamodb_on_demand:,.2f} a month"),
        (
            "DynamoDB provisioned",
            f"${b.dynamodb_provisioned:,.2f} a month (auto scaling at {bills.AUTOSCALING_TARGET:.0%}; "
            f"cheaper while the average load is over {b.provisioned_break_even:.0%} of the peak)",
        ),
        *(
            (
                f"whole bill with {f.name}",
                f"${b.total(f.name):,.2f} on demand, ${b.total(f.name, provisioned=True):,.2f} provisioned",
            )
            for f in b.fronts
        ),
        (
            "caller limits (WAF, REST API)",
            f"${b.caller_limits_monthly:,.2f} a month if CallerRateLimit is on (a web ACL, "
            f"{bills.CALLER_LIMIT_RULES} rules, every request; not in the totals above)",
        ),
    ]
    width = max(len(label) for label, _ in rows)
    return [
        "",
        f"the whole bill (list prices, {capacity.PRICE_REGION}, as of {bills.PRICE_DATE}; no API cache):",
        *(f"{label:<{width}}  {value}" for label, value in rows),
    ]


def upkeep_rows(w: Workload, p: Plan, tree: TreeShape) -> list[tuple[str, str]]:
    """What the stream consumers write, and from what: the stream's shards and batch, the
    count tree's writes at that batch, the head's writes."""
    u = p.upkeep
    return [
        (
            "stream shards, batch",
            f"{u.stream_shards} (the streamed table's {u.streamed_wcu:,.0f} WCU/s); "
            f"{u.batch_records:,.0f} of the board's records a batch",
        ),
        (
            "count tree WCU per update",
            f"{u.tree_far_wcu:.2f} far, {u.tree_near_wcu:.2f} near (leaves of {tree.leaf_entries}, "
            f"{tree.children} children, {tree.node_wcu} WCU a node write)",
        ),
        (
            "stream WCU per update",
            f"{u.consumer_wcu:.2f} ({w.near_moves:.0%} of the updates near, the rest far, and the "
            "notifier's mark: docs/capacity.md)",
        ),
        (
            "head writes/s",
            f"{u.head_writes_per_s:,.2f} of {u.head_item_wcu} WCU, to the primary"
            + (f" and {u.head_copies} copies" if u.head_copies else " alone"),
        ),
    ]


def unit_rows(load: bills.Load, prices: Prices) -> list[tuple[str, str]]:
    """Dollars per million changes and reads, DynamoDB's part, both ways it is billed."""
    units = bills.unit_costs(load, prices)

    def row(label: str, cost: bills.UnitCost, amount: str) -> tuple[str, str]:
        return label, f"${cost.on_demand:,.4f} on demand, ${cost.provisioned:,.4f} provisioned ({amount})"

    return [
        row("a million far changes", units.far_change, f"{load.far_change_wcu:.2f} WCU each"),
        row("a million near changes", units.near_change, f"{load.near_change_wcu:.2f} WCU each"),
        row("a million top reads", units.top_read, f"{load.top_read_rcu:.3f} RCU each on average"),
        row("a million rank reads", units.rank_read, f"{load.rank_read_rcu:.3f} RCU each on average"),
    ]


def render_units(load: bills.Load, prices: Prices) -> list[str]:
    rows = unit_rows(load, prices)
    width = max(len(label) for label, _ in rows)
    return [
        "",
        "unit costs (DynamoDB; the front door, Lambda and data out come on top of each request):",
        *(f"{label:<{width}}  {value}" for label, value in rows),
    ]


def render(workload: Workload, prices: Prices, result: Plan, tree: TreeShape = PLANNED_TREE) -> str:
    p = result
    safety = workload.safety
    rows: list[tuple[str, str]] = [
        ("score updates/s", f"{workload.writes_per_s:,.0f}"),
        ("top reads/s (k)", f"{workload.top_reads_per_s:,.0f} (k={workload.k})"),
        ("rank reads/s", f"{workload.rank_reads_per_s:,.0f}"),
        ("members", f"{workload.members:,}"),
        ("", ""),
        (
            "shards (as given)" if workload.shards is not None else "shards (recommended)",
            f"{p.shards}" + (f" (needs {p.required_shards})" if p.over_capacity else ""),
        ),
        (
            "index WCU/s per shard",
            f"{p.index_wcu_per_shard:,.0f} of {capacity.PARTITION_WCU_PER_S:,} "
            f"({p.index_wcu_per_shard / capacity.PARTITION_WCU_PER_S:.0%})",
        ),
        ("updates/s these shards take", f"{p.max_writes_per_s:,.0f} (at {safety:.0%} of a partition)"),
        *upkeep_rows(workload, p, tree),
        ("table WCU/s", f"{p.table_wcu:,.0f}"),
        ("index (GSI) WCU/s", f"{p.index_wcu:,.0f}"),
        ("table RCU/s", f"{p.table_rcu:,.0f}"),
        ("index (GSI) RCU/s", f"{p.index_rcu:,.0f}"),
        (
            "index RCU/s per shard",
            f"{p.index_rcu_per_shard:,.0f} of {capacity.PARTITION_RCU_PER_S:,} "
            f"({p.index_rcu_per_shard / capacity.PARTITION_RCU_PER_S:.0%})",
        ),
        (
            "board items RCU/s",
            f"{p.board_partition_rcu:,.0f} of {capacity.PARTITION_RCU_PER_S:,} "
            f"({p.board_partition_rcu / capacity.PARTITION_RCU_PER_S:.0%})",
        ),
        (
            "count tree items RCU/s",
            f"{p.tree_partition_rcu:,.0f} (its root {p.tree_root_rcu:,.0f} of "
            f"{capacity.PARTITION_RCU_PER_S:,}: {p.tree_root_rcu / capacity.PARTITION_RCU_PER_S:.0%})",
        ),
        (
            "count tree: busiest spread key",
            f"{p.tree_spread_rcu:,.0f} of {capacity.PARTITION_RCU_PER_S:,} "
            f"({p.tree_spread_rcu / capacity.PARTITION_RCU_PER_S:.0%}; "
            f"{capacity.TREE_SPREAD} keys below the root)",
        ),
        (
            "count tree: busiest node",
            f"{p.tree_node_rcu:,.0f} of {capacity.PARTITION_RCU_PER_S:,} "
            f"({p.tree_node_rcu / capacity.PARTITION_RCU_PER_S:.0%}; each of the root's children)",
        ),
        ("instances the reads keep busy", f"{p.read_instances:,.0f} (each keeps its own board, head, root)"),
        (
            "head item RCU/s",
            (
                f"{p.head_item_rcu:,.0f} over {p.upkeep.head_copies} copies: {p.head_copy_rcu:,.0f} "
                f"of {capacity.PARTITION_RCU_PER_S:,} each "
                f"({p.head_copy_rcu / capacity.PARTITION_RCU_PER_S:.0%})"
            )
            if p.upkeep.head_copies
            else f"{p.head_item_rcu:,.0f} (the primary alone, on the board's partition)",
        ),
        ("top read: RCU each", f"{p.top_rcu_per_read:g} ({p.top_reads_to_dynamodb:,.0f}/s reach DynamoDB)"),
        ("rank read: RCU each", f"{p.rank_rcu_per_read:g} (naive COUNT: {p.naive_rank_rcu_per_read:,.1f})"),
        ("storage per member", f"{p.bytes_per_member:,} B ({p.storage_gb:,.2f} GB)"),
        ("", ""),
        (f"writes ${prices.write_per_million}/M WRU", f"${p.monthly_write_cost:,.2f} a month"),
        (f"reads ${prices.read_per_million}/M RRU", f"${p.monthly_read_cost:,.2f} a month"),
        (f"storage ${prices.storage_per_gb_month}/GB-month", f"${p.monthly_storage_cost:,.2f} a month"),
        (f"API cache ${prices.cache_per_hour}/hour", f"${p.monthly_cache_cost:,.2f} a month"),
        ("total (DynamoDB and API cache)", f"${p.monthly_cost:,.2f} a month"),
    ]
    width = max(len(label) for label, _ in rows)
    lines = [f"{label:<{width}}  {value}" if label else "" for label, value in rows]
    lines.append(
        f"\nprices: {capacity.PRICE_REGION}, on-demand, Standard table class, as of {capacity.PRICE_DATE}"
    )
    lines.extend(render_bill(workload, p, prices))
    lines.extend(render_units(p, prices))
    lines.extend(f"warning: {warning}" for warning in p.warnings)
    return "\n".join(lines)


def money(value: float) -> str:
    return f"${value:,.2f}"


def rate(value: float) -> str:
    """A break-even rate: changes a second, or never / always."""
    if value == 0:
        return "never"
    if value == float("inf"):
        return "always"
    return f"{value:,.1f}/s"


def compare_rows(sides: list[Side]) -> list[tuple[str, list[str]]]:
    """The rows of the side-by-side table, one column a workload."""

    def units(pick: str) -> list[str]:
        costs = [getattr(s.unit_costs, pick) for s in sides]
        return [f"${c.on_demand:,.4f} / ${c.provisioned:,.4f}" for c in costs]

    return [
        ("score changes/s", [f"{s.writes_per_s:,.0f}" for s in sides]),
        ("reads/s", [f"{s.reads_per_s:,.0f}" for s in sides]),
        ("DynamoDB on demand, a month", [money(s.dynamodb_on_demand) for s in sides]),
        ("DynamoDB provisioned, a month", [money(s.dynamodb_provisioned) for s in sides]),
        ("a million far changes (od / prov)", units("far_change")),
        ("a million near changes", units("near_change")),
        ("a million top reads", units("top_read")),
        ("a million rank reads", units("rank_read")),
        (
            f"ElastiCache {alternatives.NODES} x {alternatives.NODE_TYPE}",
            [money(s.node_cluster) for s in sides],
        ),
        ("ElastiCache Serverless (Valkey)", [money(s.serverless) for s in sides]),
        (
            "Podium cheaper than the nodes below",
            [
                f"{rate(s.versus_node_cluster.on_demand)} / {rate(s.versus_node_cluster.provisioned)}"
                for s in sides
            ],
        ),
        (
            "Podium cheaper than Serverless below",
            [
                f"{rate(s.versus_serverless.on_demand)} / {rate(s.versus_serverless.provisioned)}"
                for s in sides
            ],
        ),
    ]


def render_compare(sides: list[Side], tree: TreeShape = PLANNED_TREE) -> str:
    """Both workloads side by side, what each is, and what the figures assume."""
    rows = [("", [s.name for s in sides]), *compare_rows(sides)]
    width = max(len(label) for label, _ in rows)
    columns = [max(len(cells[i]) for _, cells in rows) for i in range(len(sides))]
    lines = [
        "Podium's DynamoDB beside a Redis sorted set in ElastiCache, the data tier alone "
        f"({capacity.PRICE_REGION} list prices; ElastiCache as read on {alternatives.PRICE_DATE}):",
        "",
        *(
            f"{label:<{width}}  " + "  ".join(f"{cell:>{w}}" for cell, w in zip(cells, columns, strict=True))
            for label, cells in rows
        ),
        "",
        *(f"{s.name}: {s.label}; {s.verdict}" for s in sides),
        "",
        "per board: a far change's WCU, a top's and a rank's RCU, its records a batch, its head's copies:",
        *(
            f"  {s.name}, {b.boards:,} of {b.members:,} members: {b.far_change_wcu:.2f} WCU, "
            f"{b.top_read_rcu:.3f} and {b.rank_read_rcu:.3f} RCU, {b.batch_records:,.0f} a batch, "
            f"{b.head_copies} copies"
            for s in sides
            for b in s.boards
        ),
        "",
        "unit costs: on demand / provisioned (auto scaling at "
        f"{bills.AUTOSCALING_TARGET:.0%}); break-even rates: changes a second, the reads scaled "
        "with them, on demand / provisioned",
        f"count tree: leaves of {tree.leaf_entries}, {tree.children} children, {tree.node_wcu} WCU "
        "a node write (planner.capacity.PLANNED_TREE)",
    ]
    return "\n".join(lines)


def compare_json(sides: list[Side], tree: TreeShape = PLANNED_TREE) -> dict[str, Any]:
    return {
        "tree": asdict(tree),
        "alternatives": {
            "asOf": alternatives.PRICE_DATE,
            "region": capacity.PRICE_REGION,
            "nodeType": alternatives.NODE_TYPE,
            "nodes": alternatives.NODES,
            "nodeHour": alternatives.NODE_HOUR,
            "serverlessEcpuPerMillion": alternatives.SERVERLESS_ECPU_PER_MILLION,
            "serverlessGbHour": alternatives.SERVERLESS_GB_HOUR,
            "serverlessMinGb": alternatives.SERVERLESS_MIN_GB,
        },
        "workloads": [finite(asdict(s)) for s in sides],
    }


def finite(document: Any) -> Any:
    """The document with every infinite number (a break-even Podium always wins) as None:
    JSON has no infinity."""
    if isinstance(document, dict):
        return {key: finite(value) for key, value in document.items()}
    if isinstance(document, float) and math.isinf(document):
        return None
    return document
