"""``python -m planner``: shards, request units and the monthly on-demand bill of one board.

Example: python -m planner --writes 5000 --reads 20000 --members 1000000 --k 100
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from planner import capacity
from planner.capacity import Plan, Prices, Workload

DEFAULT_RANK_FRACTION = 0.2  # of --reads, the share that are rank reads; the rest are top reads


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m planner", description=__doc__.splitlines()[0])
    workload = parser.add_argument_group("workload (one board)")
    workload.add_argument("--writes", type=float, required=True, help="score updates a second")
    workload.add_argument("--reads", type=float, default=0.0, help="top and rank reads a second")
    workload.add_argument(
        "--rank-fraction",
        type=float,
        default=DEFAULT_RANK_FRACTION,
        help=f"of --reads, the share that are rank reads (default {DEFAULT_RANK_FRACTION})",
    )
    workload.add_argument("--top-reads", type=float, help="top reads a second (instead of --reads)")
    workload.add_argument("--rank-reads", type=float, help="rank reads a second (instead of --reads)")
    workload.add_argument("--members", type=int, required=True)
    workload.add_argument("--k", type=int, default=10, help="the `limit` of a top read (default 10)")
    workload.add_argument("--data-bytes", type=int, default=200, help="a member's data, serialised")
    workload.add_argument("--events", type=float, default=0.0, help="events a second through the event log")
    workload.add_argument("--shards", type=int, help="plan these shards instead of the recommended count")
    workload.add_argument(
        "--consistent", action="store_true", help="top reads use consistent=true (never the head item)"
    )
    workload.add_argument("--cache-ttl", type=float, default=0.0, help="TopCacheTtlSeconds (default 0: off)")
    workload.add_argument("--cached-pages", type=int, default=10, help="distinct top pages being read")
    workload.add_argument(
        "--safety", type=float, default=capacity.SAFETY_FRACTION, help="of a partition's limit"
    )
    prices = parser.add_argument_group(
        f"prices (USD, {capacity.PRICE_REGION}, on-demand, as of {capacity.PRICE_DATE})"
    )
    prices.add_argument(
        "--price-write", type=float, default=capacity.WRITE_PRICE_PER_MILLION, help="per million WRU"
    )
    prices.add_argument(
        "--price-read", type=float, default=capacity.READ_PRICE_PER_MILLION, help="per million RRU"
    )
    prices.add_argument(
        "--price-storage", type=float, default=capacity.STORAGE_PRICE_PER_GB_MONTH, help="per GB-month"
    )
    prices.add_argument(
        "--price-cache", type=float, default=capacity.CACHE_PRICE_PER_HOUR, help="API cache, per hour"
    )
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")
    return parser


def workload_from(args: argparse.Namespace) -> Workload:
    rank_reads = args.rank_reads if args.rank_reads is not None else args.reads * args.rank_fraction
    top_reads = args.top_reads if args.top_reads is not None else args.reads - args.reads * args.rank_fraction
    return Workload(
        writes_per_s=args.writes,
        top_reads_per_s=top_reads,
        rank_reads_per_s=rank_reads,
        members=args.members,
        k=args.k,
        data_bytes=args.data_bytes,
        events_per_s=args.events,
        shards=args.shards,
        head=not args.consistent,
        cache_ttl_s=args.cache_ttl,
        cached_pages=args.cached_pages,
        safety=args.safety,
    )


def as_json(workload: Workload, prices: Prices, result: Plan) -> dict[str, Any]:
    return {
        "workload": asdict(workload),
        "prices": {**asdict(prices), "region": capacity.PRICE_REGION, "asOf": capacity.PRICE_DATE},
        "plan": {**asdict(result), "monthly_cost": result.monthly_cost},
    }


def render(workload: Workload, prices: Prices, result: Plan) -> str:
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
    lines.extend(f"warning: {warning}" for warning in p.warnings)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    workload = workload_from(args)
    prices = Prices(args.price_write, args.price_read, args.price_storage, args.price_cache)
    result = capacity.plan(workload, prices)
    if args.json:
        print(json.dumps(as_json(workload, prices, result), indent=2))
    else:
        print(render(workload, prices, result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
