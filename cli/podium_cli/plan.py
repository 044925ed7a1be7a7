"""``podium plan``: shards, request units and the monthly on-demand bill of one board in
AWS (the arithmetic is ``planner.capacity``'s; docs/capacity.md explains every figure)."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from planner import capacity, compare, fleet
from planner.capacity import Prices, Workload
from planner.report import as_json, compare_json, render, render_compare
from podium_cli.output import print_line

DEFAULT_RANK_FRACTION = 0.2  # of --reads, the share that are rank reads; the rest are top reads
WORKLOAD = "Workload (one board)"
QUIET = "Quiet boards (--compare)"
TREE = "Count tree layout (planner.capacity.PLANNED_TREE unless given)"
PRICES = f"Prices (USD, {capacity.PRICE_REGION}, on-demand, as of {capacity.PRICE_DATE})"


def plan_command(
    writes: Annotated[
        float | None, typer.Option(help="Score updates a second", rich_help_panel=WORKLOAD)
    ] = None,
    members: Annotated[
        int | None, typer.Option(help="Members on the board", rich_help_panel=WORKLOAD)
    ] = None,
    reads: Annotated[float, typer.Option(help="Top and rank reads a second", rich_help_panel=WORKLOAD)] = 0.0,
    rank_fraction: Annotated[
        float, typer.Option(help="Of --reads, the share that are rank reads", rich_help_panel=WORKLOAD)
    ] = DEFAULT_RANK_FRACTION,
    top_reads: Annotated[
        float | None, typer.Option(help="Top reads a second (instead of --reads)", rich_help_panel=WORKLOAD)
    ] = None,
    rank_reads: Annotated[
        float | None, typer.Option(help="Rank reads a second (instead of --reads)", rich_help_panel=WORKLOAD)
    ] = None,
    k: Annotated[int, typer.Option("--k", help="The `limit` of a top read", rich_help_panel=WORKLOAD)] = 10,
    data_bytes: Annotated[
        int, typer.Option(help="A member's data, serialised", rich_help_panel=WORKLOAD)
    ] = 200,
    near_moves: Annotated[
        float,
        typer.Option(
            min=0.0,
            max=1.0,
            help="Of the updates, the share that stay in their leaf of the count tree (small increments)",
            rich_help_panel=WORKLOAD,
        ),
    ] = 0.0,
    events: Annotated[
        float, typer.Option(help="Events a second through the event log", rich_help_panel=WORKLOAD)
    ] = 0.0,
    shards: Annotated[
        int | None,
        typer.Option(help="Plan these shards instead of the recommended count", rich_help_panel=WORKLOAD),
    ] = None,
    consistent: Annotated[
        bool,
        typer.Option(
            "--consistent",
            help="Top reads use consistent=true (never the head item)",
            rich_help_panel=WORKLOAD,
        ),
    ] = False,
    cache_ttl: Annotated[
        float, typer.Option(help="TopCacheTtlSeconds (0: off)", rich_help_panel=WORKLOAD)
    ] = 0.0,
    cached_pages: Annotated[
        int, typer.Option(help="Distinct top pages being read", rich_help_panel=WORKLOAD)
    ] = 10,
    read_cache: Annotated[
        float,
        typer.Option(help="ReadCacheSeconds (0: nothing kept)", rich_help_panel=WORKLOAD),
    ] = capacity.READ_CACHE_SECONDS,
    safety: Annotated[
        float, typer.Option(help="Of a partition's limit, the share planned for", rich_help_panel=WORKLOAD)
    ] = capacity.SAFETY_FRACTION,
    price_write: Annotated[
        float, typer.Option(help="Per million WRU", rich_help_panel=PRICES)
    ] = capacity.WRITE_PRICE_PER_MILLION,
    price_read: Annotated[
        float, typer.Option(help="Per million RRU", rich_help_panel=PRICES)
    ] = capacity.READ_PRICE_PER_MILLION,
    price_storage: Annotated[
        float, typer.Option(help="Per GB-month", rich_help_panel=PRICES)
    ] = capacity.STORAGE_PRICE_PER_GB_MONTH,
    price_cache: Annotated[
        float, typer.Option(help="API cache, per hour", rich_help_panel=PRICES)
    ] = capacity.CACHE_PRICE_PER_HOUR,
    price_waf_acl: Annotated[
        float, typer.Option(help="AWS WAF web ACL (CallerRateLimit), per month", rich_help_panel=PRICES)
    ] = capacity.WAF_WEB_ACL_PER_MONTH,
    price_waf_rule: Annotated[
        float, typer.Option(help="AWS WAF rule, per month", rich_help_panel=PRICES)
    ] = capacity.WAF_RULE_PER_MONTH,
    price_waf_requests: Annotated[
        float, typer.Option(help="AWS WAF, per million requests", rich_help_panel=PRICES)
    ] = capacity.WAF_PER_MILLION_REQUESTS,
    leaf_entries: Annotated[
        int, typer.Option(min=1, help="Entries a leaf holds as built", rich_help_panel=TREE)
    ] = capacity.PLANNED_TREE.leaf_entries,
    children: Annotated[
        int, typer.Option(min=2, help="Children an inner node holds as built", rich_help_panel=TREE)
    ] = capacity.PLANNED_TREE.children,
    node_wcu: Annotated[
        int, typer.Option(min=1, help="WCU of one write of a node", rich_help_panel=TREE)
    ] = capacity.PLANNED_TREE.node_wcu,
    json_output: Annotated[bool, typer.Option("--json", help="Print the plan as JSON")] = False,
    side_by_side: Annotated[
        bool,
        typer.Option(
            "--compare",
            help="Two workloads side by side against ElastiCache: the hot board (the flags' board, "
            "or the reference) and many quiet boards, with the break-even rates",
        ),
    ] = False,
    boards: Annotated[
        int, typer.Option(min=1, help="Quiet boards: how many", rich_help_panel=QUIET)
    ] = fleet.QUIET_BOARDS.boards,
    smallest: Annotated[
        int, typer.Option(min=1, help="Quiet boards: the smallest's members", rich_help_panel=QUIET)
    ] = fleet.QUIET_BOARDS.smallest,
    largest: Annotated[
        int, typer.Option(min=1, help="Quiet boards: the largest's members", rich_help_panel=QUIET)
    ] = fleet.QUIET_BOARDS.largest,
    fleet_writes: Annotated[
        float, typer.Option(help="Quiet boards: score changes a second in all", rich_help_panel=QUIET)
    ] = fleet.QUIET_BOARDS.writes_per_s,
    fleet_reads: Annotated[
        float, typer.Option(help="Quiet boards: reads a second in all", rich_help_panel=QUIET)
    ] = fleet.QUIET_BOARDS.reads_per_s,
) -> None:
    """Plan one board's capacity in AWS: shards, RCU/WCU, the monthly bill and the unit
    costs (arithmetic only: no API, no AWS call). --compare prints the hot board beside
    many quiet boards, each against ElastiCache.

    Example: podium plan --writes 5000 --reads 20000 --members 1000000 --k 100
    """
    if writes is None or members is None:
        if not side_by_side:
            raise typer.BadParameter("--writes and --members are needed (or --compare alone)")
        writes, members = compare.HOT_BOARD.writes_per_s, compare.HOT_BOARD.members
        reads, k = compare.HOT_BOARD.top_reads_per_s + compare.HOT_BOARD.rank_reads_per_s, compare.HOT_BOARD.k
    workload = Workload(
        writes_per_s=writes,
        top_reads_per_s=top_reads if top_reads is not None else reads - reads * rank_fraction,
        rank_reads_per_s=rank_reads if rank_reads is not None else reads * rank_fraction,
        members=members,
        k=k,
        data_bytes=data_bytes,
        events_per_s=events,
        shards=shards,
        head=not consistent,
        cache_ttl_s=cache_ttl,
        cached_pages=cached_pages,
        safety=safety,
        read_cache_s=read_cache,
        near_moves=near_moves,
    )
    prices = Prices(
        price_write, price_read, price_storage, price_cache, price_waf_acl, price_waf_rule, price_waf_requests
    )
    tree = capacity.TreeShape(leaf_entries, children, node_wcu)
    if side_by_side:
        quiet = fleet.Fleet(
            boards, smallest, max(smallest, largest), fleet_writes, fleet_reads, rank_fraction
        )
        sides = compare.compare(workload, quiet, prices, tree)
        print_line(
            json.dumps(compare_json(sides, tree), indent=2) if json_output else render_compare(sides, tree)
        )
        return
    result = capacity.plan(workload, prices, tree)
    if json_output:
        # The plan's figures are estimates in floats, not scores: the standard encoder is right.
        print_line(json.dumps(as_json(workload, prices, result, tree), indent=2))
    else:
        print_line(render(workload, prices, result, tree))
