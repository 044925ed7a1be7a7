"""The benchmark run: start DynamoDB Local and redis-server, grow one board per shard
count step by step, and measure every access pattern at each size."""

from __future__ import annotations

import json
import math
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import time
from bisect import bisect_right
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cache, partial
from pathlib import Path
from typing import Any, Literal

from bench import churn, grown, hot, load, probe, redis_ref, reshardrun, scores, worst
from bench.measure import Recorder, Sample, create_tables, percentile, summarise
from devstack.dynamodb_local import DynamoDBLocal, find_jar
from devstack.stack import use_local_credentials
from podium import fanout
from podium.dal import Database
from podium.keys import just_below, order_of, rank_partition_key
from podium.models import BoardSettings, Page
from podium.periods import ALL_TIME
from podium.ranking import merge_shards
from podium.validation import BoardRequest, MemberRequest
from podium.wiring import Services

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "bench-data"  # git-ignored: raw results and logs
FULL_SIZES = (10_000, 100_000)  # every shard count; then one big board (Plan.big_size)
QUICK_SIZES = (2_000, 6_000)
DEPTHS = (("top", 0.0), ("1%", 0.01), ("10%", 0.10), ("50%", 0.50), ("90%", 0.90), ("last", 1.0))
BIG_DATA_BYTES = 60 * 1024


@dataclass
class Plan:
    sizes: tuple[int, ...]
    budget_s: float  # seconds of loading, all boards together, before growth stops
    quick: bool = False
    shards: tuple[int, ...] = (1, 10, 50)
    ks: tuple[int, ...] = (10, 100, 1000)
    head_ks: tuple[int, ...] = (10, 100)
    page_size: int = 100
    pages: int = 5
    min_runs: int = 5
    max_runs: int = 30
    cell_seconds: float = 2.0  # keep repeating a measurement until min_runs and this much time
    # After the ladder, one board (big_shards) grows on to big_size members with its score
    # items only (top and rank read nothing else), within big_budget_s of loading.
    big_size: int = 0
    big_shards: int = 10
    big_budget_s: float = 600.0
    # Top-k while scores change (bench/churn.py); seconds 0: not measured.
    churn_plan: churn.ChurnPlan = field(default_factory=churn.ChurnPlan)
    # A board grown through the API and read while writers run (bench/grown.py); members 0: none.
    grown_plan: grown.GrownPlan = field(default_factory=grown.GrownPlan)
    # The worst case of every route (bench/worst.py); members 0: not measured.
    worst_plan: worst.WorstPlan = field(default_factory=worst.WorstPlan)
    # A board re-sharded 3 -> 17 by the worker (bench/reshardrun.py); members 0: not measured.
    reshard_members: int = 20_000
    # A hot board read by many instances at once (bench/hot.py); seconds 0: not measured.
    hot_plan: hot.HotPlan = field(default_factory=hot.HotPlan)
    out: Path = ROOT / "docs"
    data: Path = DATA

    @classmethod
    def from_environment(cls, quick: bool) -> Plan:
        maximum = int(os.environ.get("BENCH_MAX_MEMBERS", "1000000"))
        ladder = QUICK_SIZES if quick else FULL_SIZES
        sizes = tuple(size for size in ladder if size <= maximum) or (maximum,)
        if maximum not in sizes and maximum > sizes[-1] and maximum < ladder[-1]:
            sizes = (*sizes, maximum)
        budget = float(os.environ.get("BENCH_BUDGET_S", "90" if quick else "600"))
        churn_seconds = float(os.environ.get("BENCH_CHURN_S", "15" if quick else "60"))
        grown_plan = grown.GrownPlan(
            members=int(os.environ.get("BENCH_GROWN_MEMBERS", "3000" if quick else "20000")),
            churn_s=churn_seconds,
        )
        reshard_members = int(os.environ.get("BENCH_RESHARD_MEMBERS", "2000" if quick else "20000"))
        worst_plan = worst.WorstPlan.small() if quick else worst.WorstPlan()
        worst_plan.members = int(os.environ.get("BENCH_WORST_MEMBERS", "5000" if quick else "1000000"))
        hot_seconds = float(os.environ.get("BENCH_HOT_S", "6" if quick else "20"))
        hot_plan = hot.HotPlan(members=3_000 if quick else 20_000, seconds=hot_seconds)
        if quick:
            worst_plan.runs = 1
            return cls(
                hot_plan=hot_plan,
                worst_plan=worst_plan,
                reshard_members=reshard_members,
                grown_plan=grown_plan,
                churn_plan=churn.ChurnPlan(members=3_000, seconds=churn_seconds, shards=(10,)),
                big_size=int(os.environ.get("BENCH_BIG_MEMBERS", "0")),
                sizes=sizes,
                budget_s=budget,
                quick=True,
                pages=3,
                min_runs=2,
                max_runs=5,
                cell_seconds=0.2,
                out=DATA / "quick",
                data=DATA / "quick",
            )
        big = int(os.environ.get("BENCH_BIG_MEMBERS", "1000000"))
        big_budget = float(os.environ.get("BENCH_BIG_BUDGET_S", "600"))
        return cls(
            hot_plan=hot_plan,
            worst_plan=worst_plan,
            reshard_members=reshard_members,
            grown_plan=grown_plan,
            sizes=sizes,
            budget_s=budget,
            big_size=big,
            big_budget_s=big_budget,
            churn_plan=churn.ChurnPlan(seconds=churn_seconds),
        )


@dataclass
class Context:
    plan: Plan
    service: Services
    store: Database
    loader_client: Any
    recorder: Recorder
    redis: Any
    population: load.Population = field(default_factory=load.Population)
    boards: dict[int, str] = field(default_factory=dict)
    settings: dict[int, BoardSettings] = field(default_factory=dict)
    loaded: int = 0
    profiled: int = 0  # members 0 .. profiled-1 have a profile item (the big board's others do not)
    joined: dict[int, int] = field(default_factory=dict)  # members put_member added, per board
    overrides: dict[int, dict[int, int]] = field(default_factory=dict)  # scores writes changed
    notes: list[str] = field(default_factory=list)
    capabilities: dict[str, bool] = field(
        default_factory=lambda: {"consistentKeyword": True, "rebuild": True}
    )
    rows: list[dict[str, Any]] = field(default_factory=list)
    loads: list[dict[str, Any]] = field(default_factory=list)
    rebuilds: list[dict[str, Any]] = field(default_factory=list)
    checks: list[dict[str, Any]] = field(default_factory=list)
    probes: list[dict[str, Any]] = field(default_factory=list)
    churn: list[dict[str, Any]] = field(default_factory=list)
    hot: dict[str, Any] | None = None
    grown: dict[str, Any] | None = None
    worst: dict[str, Any] | None = None
    reshard: dict[str, Any] | None = None

    def note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)
            print(f"note: {text}")


# -- measuring ------------------------------------------------------------------------


def measure(
    ctx: Context, operation: Callable[[], Any], warm: bool = True, runs: int | None = None
) -> tuple[dict[str, Any], Any]:
    """Run ``operation`` (once unrecorded to warm up) until ``min_runs`` runs and
    ``cell_seconds`` have passed, or ``max_runs`` (or exactly ``runs``); its summary and
    last result."""
    plan = ctx.plan
    if warm:
        operation()
    samples: list[Sample] = []
    started = time.perf_counter()
    result = None
    most = runs or plan.max_runs
    least = runs or plan.min_runs
    while len(samples) < most and (
        len(samples) < least or (runs is None and time.perf_counter() - started < plan.cell_seconds)
    ):
        with ctx.recorder.window() as window:
            result = operation()
        samples.append(Sample.of(window))
    return summarise(samples), result


def timed_only(ctx: Context, operation: Callable[[], Any]) -> dict[str, Any]:
    """Latency of something that is not DynamoDB (Redis)."""
    plan = ctx.plan
    operation()
    latencies: list[float] = []
    started = time.perf_counter()
    while len(latencies) < plan.max_runs and (
        len(latencies) < plan.min_runs or time.perf_counter() - started < plan.cell_seconds
    ):
        latencies.append(redis_ref.timed(operation) * 1000)
    return {"runs": len(latencies), "p50Ms": percentile(latencies, 0.5), "p95Ms": percentile(latencies, 0.95)}


def record(ctx: Context, size: int, shards: int | None, pattern: str, variant: str, **fields: Any) -> None:
    ctx.rows.append({"size": size, "shards": shards, "pattern": pattern, "variant": variant, **fields})


# -- the patterns -----------------------------------------------------------------------


def naive_top(ctx: Context, shards: int, k: int) -> list[str]:
    """The references' top-k: every shard's first k keys, merged."""
    board_id = ctx.boards[shards]
    partitions = [rank_partition_key(board_id, ALL_TIME, shard) for shard in range(shards)]
    pages = fanout.gather(lambda p: ctx.store.index.keys_in_range(p, None, None, limit=k), partitions)
    return merge_shards(pages, k)


def naive_rank(ctx: Context, shards: int, member: str) -> int:
    """The references' rank: 1 + COUNT of every entry above the score, on every shard."""
    board_id = ctx.boards[shards]
    state = ctx.store.members.get_score(board_id, member, ALL_TIME)
    assert state is not None, member
    below = just_below(order_of(ctx.settings[shards]).score_bound(state.score))
    partitions = [rank_partition_key(board_id, ALL_TIME, shard) for shard in range(shards)]
    return 1 + sum(fanout.gather(lambda p: ctx.store.index.count_range(p, None, below), partitions))


def service_top(ctx: Context, board_id: str, limit: int, cursor: str | None, consistent: bool) -> Page:
    return ctx.service.reads.top(board_id, limit, cursor, False, consistent=consistent)


def with_shard_rounds(summary: dict[str, Any], rounds: list[int]) -> dict[str, Any]:
    """The summary with the rounds of shard queries that the service's reads took, as
    ``gather_top`` counts them (``ReadService.top_read``): each round's queries are sent at once,
    so a round is one round trip, however the threads happen to be scheduled here."""
    return {
        **summary,
        "queryRounds": float(statistics.median(rounds)),
        "oneQueryRoundShare": sum(1 for r in rounds if r == 1) / len(rounds),
    }


def consistent_top(
    ctx: Context, board_id: str, limit: int, cursor: str | None, rounds: list[int], consistent: bool = True
) -> Page:
    """``service_top(..., consistent=True)``, noting the rounds of shard queries it took."""
    read = ctx.service.reads.top_read(board_id, limit, cursor, False, consistent=consistent)
    assert read.stats is not None
    rounds.append(read.stats.rounds)
    return read.page


def measure_top(ctx: Context, size: int, shards: int) -> None:
    board_id = ctx.boards[shards]
    order = order_of(ctx.settings[shards])
    for k in ctx.plan.ks:
        summary, keys = measure(ctx, partial(naive_top, ctx, shards, k))
        record(ctx, size, shards, "top", "naive", k=k, **summary)
        rounds: list[int] = []
        summary, page = measure(ctx, partial(consistent_top, ctx, board_id, k, None, rounds))
        record(ctx, size, shards, "top", "service", k=k, **with_shard_rounds(summary, rounds[1:]))
        naive_ids = [order.parse(key)[1] for key in keys]
        ctx.checks.append(
            {
                "check": f"top {k}: service (consistent) == naive",
                "size": size,
                "shards": shards,
                "ok": naive_ids == [entry.member_id for entry in page.entries],
            }
        )
    for k in ctx.plan.head_ks:
        summary, page = measure(ctx, partial(service_top, ctx, board_id, k, None, False))
        record(ctx, size, shards, "top", "head", k=k, **summary)
        expected = [order.parse(key)[1] for key in naive_top(ctx, shards, k)]
        ctx.checks.append(
            {
                "check": f"top {k}: service (head) == naive",
                "size": size,
                "shards": shards,
                "ok": expected == [entry.member_id for entry in page.entries],
            }
        )


def measure_cursor_walk(ctx: Context, size: int, shards: int) -> None:
    """Pages 2.. of the listing, each after the previous page's nextCursor, as a client
    reads them by default (not ``consistent``): the page from the index, steered by the
    head, and its place counted as a rank is, from the count tree. (With ``consistent=true``
    the place is counted from the index itself while that fits the read bound: the entries
    above the cursor, as ``consistent`` asks.)"""
    plan = ctx.plan
    board_id = ctx.boards[shards]
    samples: list[Sample] = []
    rounds: list[int] = []
    walks = max(1, plan.min_runs // 2)
    for _ in range(walks):
        first = service_top(ctx, board_id, plan.page_size, None, True)
        cursor = first.next_cursor
        for _ in range(plan.pages):
            if cursor is None:
                break
            with ctx.recorder.window() as window:
                page = consistent_top(ctx, board_id, plan.page_size, cursor, rounds, consistent=False)
            samples.append(Sample.of(window))
            cursor = page.next_cursor
    if samples:
        record(
            ctx, size, shards, "top-after-cursor", "service", k=plan.page_size, pages=plan.pages,
            **with_shard_rounds(summarise(samples), rounds),
        )  # fmt: skip


def depth_members(ctx: Context, size: int, shards: int) -> list[tuple[str, int, str]]:
    listing = ctx.population.listing(size, ctx.overrides.get(shards))
    chosen = []
    for name, fraction in DEPTHS:
        position = max(1, min(size, math.ceil(fraction * size)))
        chosen.append((name, position, load.member_id(listing[position - 1])))
    return chosen


def measure_rank(ctx: Context, size: int, shards: int) -> None:
    board_id = ctx.boards[shards]
    for depth, position, member in depth_members(ctx, size, shards):
        slow = size >= 100_000 and position >= 10_000  # reads everyone above: once is enough
        summary, naive = measure(
            ctx, partial(naive_rank, ctx, shards, member), warm=not slow, runs=1 if slow else None
        )
        record(ctx, size, shards, "rank", "naive", depth=depth, position=position, **summary)
        summary, served = measure(ctx, partial(ctx.service.reads.rank, board_id, member))
        record(ctx, size, shards, "rank", "service", depth=depth, position=position, **summary)
        ctx.checks.append(
            {
                "check": f"rank at {depth}: service == naive",
                "size": size,
                "shards": shards,
                "ok": served["rank"] == naive,
            }
        )


def measure_ranks(ctx: Context, size: int, shards: int) -> None:
    """``POST .../ranks`` of 100 members spread evenly over the listing (each in a leaf of
    the count tree of its own: the most nodes 100 ids can read), against the sorted list."""
    board_id = ctx.boards[shards]
    overrides = ctx.overrides.get(shards) or {}
    listing = ctx.population.listing(size, overrides)
    chosen = [listing[(2 * k + 1) * size // 200] for k in range(min(100, size))]
    summary, answer = measure(
        ctx, partial(ctx.service.reads.ranks, board_id, [load.member_id(i) for i in chosen])
    )
    record(ctx, size, shards, "ranks", "service", ids=len(chosen), **summary)

    def score(index: int) -> int:
        return overrides.get(index, ctx.population.scores[index])

    ascending = sorted(score(i) for i in range(size))
    expected = [
        (1 + size - bisect_right(ascending, score(i)), load.member_id(i)) for i in chosen
    ]  # in listing order
    ctx.checks.append(
        {
            "check": "ranks of 100 spread over the listing: service == sorted list",
            "size": size,
            "shards": shards,
            "ok": [(e.rank, e.member_id) for e in answer] == expected,
        }
    )


def measure_writes(ctx: Context, size: int, shards: int) -> None:
    from decimal import Decimal

    board_id = ctx.boards[shards]
    overrides = ctx.overrides.setdefault(shards, {})
    draw = random.Random(size * 100 + shards)

    def submit(index: int) -> None:
        delta = draw.randrange(1, 1000)
        change = ctx.service.members.submit_score(board_id, load.member_id(index), Decimal(delta))
        overrides[index] = int(change.score)

    def joiner() -> None:
        number = ctx.joined.get(shards, 0)
        ctx.joined[shards] = number + 1
        request = MemberRequest(data={"name": f"joiner {number}"}, score=None)
        ctx.service.members.put_member(board_id, f"joiner-{number:06d}", request)

    summary, _ = measure(ctx, lambda: submit(draw.randrange(0, size)))
    record(ctx, size, shards, "write", "submit_score", what="submit_score, existing member", **summary)

    big = draw.randrange(0, ctx.profiled)
    while big in overrides:
        big = draw.randrange(0, ctx.profiled)
    payload = {"bio": "x" * BIG_DATA_BYTES}
    big_member = load.member_id(big)
    summary, _ = measure(
        ctx,
        lambda: ctx.service.members.put_member(board_id, big_member, MemberRequest(data=payload, score=None)),
    )
    record(ctx, size, shards, "write", "put_member", what="put_member, replace data (60 KB)", **summary)
    summary, _ = measure(ctx, partial(submit, big))
    record(ctx, size, shards, "write", "submit_score", what="submit_score, member with 60 KB data", **summary)
    summary, _ = measure(ctx, joiner)
    record(ctx, size, shards, "write", "put_member", what="put_member, new member", **summary)


def measure_redis(ctx: Context, size: int) -> None:
    client = ctx.redis
    for k in ctx.plan.ks:
        record(ctx, size, None, "top", "redis", k=k, **timed_only(ctx, partial(redis_ref.top, client, k)))
    for depth, position, member in depth_members(ctx, size, -1):
        record(
            ctx, size, None, "rank", "redis", depth=depth, position=position,
            **timed_only(ctx, partial(redis_ref.rank, client, member)),
        )  # fmt: skip


# -- loading ----------------------------------------------------------------------------


def rebuild(ctx: Context, size: int, shards: int) -> None:
    """Let the service rebuild what its stream consumer keeps (the head item, the count
    tree) for a bulk-loaded board: the bench runs no stream consumer."""
    if not ctx.capabilities["rebuild"]:
        return
    board_id = ctx.boards[shards]
    method = ctx.service.maintenance.rebuild_rank_structures
    with ctx.recorder.window() as window:
        method(board_id)
    sample = Sample.of(window)
    ctx.rebuilds.append(
        {"size": size, "shards": shards, "seconds": sample.seconds, "rcu": sample.rcu, "wcu": sample.wcu}
    )


def grow(ctx: Context, size: int) -> float:
    """Bring every board (and the Redis set) to ``size`` members; the seconds it took."""
    from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]

    start = ctx.loaded
    ctx.population.grow(size)
    added = size - start
    started = time.perf_counter()
    with tqdm(
        total=added * 2 * len(ctx.plan.shards), unit="item", unit_scale=True, desc=f"load to {size:,}"
    ) as progress:
        for shards in ctx.plan.shards:
            board_id = ctx.boards[shards]
            load.grow_board(
                ctx.loader_client, ctx.store, board_id, ctx.settings[shards], ctx.population,
                start, size, progress,
            )  # fmt: skip
            count = size + ctx.joined.get(shards, 0)
            load.set_member_count(ctx.loader_client, ctx.store, board_id, count)
    seconds = time.perf_counter() - started
    ctx.loaded = size
    ctx.profiled = size
    items = added * 2 * len(ctx.plan.shards)
    ctx.loads.append({"size": size, "items": items, "seconds": seconds, "itemsPerSecond": items / seconds})
    ids = [load.member_id(i) for i in range(start, size)]
    redis_ref.grow(ctx.redis, ids, ctx.population.scores[start:size])
    for shards in ctx.plan.shards:
        rebuild(ctx, size, shards)
    return seconds


def grow_big(ctx: Context, plan: Plan) -> None:
    """Grow one board on to ``big_size`` members (score items only), as far as
    ``big_budget_s`` of loading allows, then measure it."""
    from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]

    shards = plan.big_shards
    board_id = ctx.boards[shards]
    start = ctx.loaded
    rate = ctx.loads[-1]["itemsPerSecond"] if ctx.loads else 2_000.0
    size = plan.big_size
    if (size - start) / rate > plan.big_budget_s:
        size = max(start, start + int(plan.big_budget_s * rate) // 100_000 * 100_000)
        ctx.note(
            f"The big board stopped at {size:,} members instead of {plan.big_size:,}: at {rate:,.0f} "
            f"items/s that is what {plan.big_budget_s:.0f} s of loading (BENCH_BIG_BUDGET_S) allows."
        )
    if size <= start:
        return
    ctx.population.grow(size)
    started = time.perf_counter()
    with tqdm(total=size - start, unit="item", unit_scale=True, desc=f"load {board_id} to {size:,}") as bar:
        load.grow_board(
            ctx.loader_client, ctx.store, board_id, ctx.settings[shards], ctx.population,
            start, size, bar, profiles=False,
        )  # fmt: skip
    load.set_member_count(ctx.loader_client, ctx.store, board_id, size + ctx.joined.get(shards, 0))
    seconds = time.perf_counter() - started
    ctx.loads.append(
        {"size": size, "items": size - start, "seconds": seconds, "itemsPerSecond": (size - start) / seconds}
    )
    ctx.loaded = size
    ids = [load.member_id(i) for i in range(start, size)]
    redis_ref.grow(ctx.redis, ids, ctx.population.scores[start:size])
    rebuild(ctx, size, shards)
    print(f"measuring the big board at {size:,} members ...", flush=True)
    step_started = time.perf_counter()
    measure_top(ctx, size, shards)
    measure_cursor_walk(ctx, size, shards)
    measure_rank(ctx, size, shards)
    measure_ranks(ctx, size, shards)
    scores.measure_scores(ctx, size, shards)
    measure_redis(ctx, size)
    measure_writes(ctx, size, shards)
    print(f"  measured in {time.perf_counter() - step_started:.0f} s", flush=True)


# -- the run ----------------------------------------------------------------------------


@cache
def machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        found = re.search(r"model name\s*:\s*(.+)", Path("/proc/cpuinfo").read_text())
        cpu = found.group(1).strip() if found else cpu
    except OSError:
        pass
    memory = ""
    try:
        found = re.search(r"MemTotal:\s*(\d+)", Path("/proc/meminfo").read_text())
        memory = f"{int(found.group(1)) / 1024 / 1024:.0f} GiB" if found else ""
    except OSError:
        pass

    def version(command: list[str]) -> str:
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)  # noqa: S603
        except (OSError, subprocess.TimeoutExpired):
            return "unknown"
        text = (done.stdout or done.stderr).strip().splitlines()
        return text[0] if text else "unknown"

    java = shutil.which("java") or "java"
    redis_server = shutil.which("redis-server") or "redis-server"
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory": memory,
        "os": platform.platform(),
        "python": platform.python_version(),
        "java": version([java, "-version"]),
        "dynamodbLocal": find_jar().parent.name,
        "redis": version([redis_server, "--version"]),
    }


def cold_start(ctx: Context) -> dict[str, Any] | None:
    """``bench/coldstart.py``'s ``measure()``, unless quick mode or BENCH_COLDSTART=0."""
    if ctx.plan.quick or os.environ.get("BENCH_COLDSTART") == "0":
        ctx.note("Cold start not measured: quick mode or BENCH_COLDSTART=0.")
        return None
    return measure_cold_start()


def measure_cold_start() -> dict[str, Any] | None:
    from bench import coldstart

    print("measuring cold start (bench/coldstart.py) ...", flush=True)
    result = coldstart.measure(repeats=int(os.environ.get("BENCH_COLDSTART_REPEATS", "21")))
    if result is None:
        return None
    table = getattr(coldstart, "table", None)
    return {"result": result, "markdown": table(result) if table else None}


@contextmanager
def own_dynamodb(log_path: Path) -> Iterator[DynamoDBLocal]:
    """A DynamoDB Local of a measurement's own (in memory), stopped on the way out."""
    use_local_credentials()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    dynamodb = DynamoDBLocal.start(log_path=log_path)
    try:
        yield dynamodb
    finally:
        dynamodb.stop()


def local_client(
    endpoint: str, service: Literal["dynamodb", "dynamodbstreams"] = "dynamodb", pool: int = 64
) -> Any:
    """A client for a bench's load on DynamoDB Local: standard retries, 10 attempts."""
    import boto3
    from botocore.config import Config

    config = Config(retries={"mode": "standard", "max_attempts": 10}, max_pool_connections=pool)
    return boto3.client(service, endpoint_url=endpoint, config=config)


def measure_grown(plan: Plan) -> dict[str, Any] | None:
    """A board grown through the API and read while writers run (``bench/grown.py``), on a
    DynamoDB Local of its own: what ``--grown-only`` refreshes without the whole run."""
    if plan.grown_plan.members <= 0:
        return None
    with own_dynamodb(plan.data / "dynamodb-local-grown.log") as dynamodb:
        client = local_client(dynamodb.endpoint)
        return grown.run(dynamodb.endpoint, client, plan.grown_plan, plan.data / "grown-stack.log")


def measure_churn(plan: Plan) -> list[dict[str, Any]]:
    """Top-k while scores change (``bench/churn.py``), on a DynamoDB Local of its own: what
    ``--churn-only`` refreshes without the whole run."""
    if plan.churn_plan.seconds <= 0:
        return []
    with own_dynamodb(plan.data / "dynamodb-local-churn.log") as dynamodb:
        client = local_client(dynamodb.endpoint)
        streams = local_client(dynamodb.endpoint, "dynamodbstreams")
        return churn.run(client, streams, create_tables(client, "churn-"), plan.churn_plan)


def measure_hot(plan: Plan) -> dict[str, Any] | None:
    """A hot board read by many instances at once (``bench/hot.py``), on a DynamoDB Local
    of its own: what ``--hot-only`` refreshes without the whole run."""
    if plan.hot_plan.seconds <= 0:
        return None
    with own_dynamodb(plan.data / "dynamodb-local-hot.log") as dynamodb:
        client = local_client(dynamodb.endpoint)
        streams = local_client(dynamodb.endpoint, "dynamodbstreams")
        settings = create_tables(client, "hot-")
        return hot.run(client, streams, settings, dynamodb.endpoint, plan.hot_plan)


def measure_worst(plan: worst.WorstPlan, data: Path) -> dict[str, Any] | None:
    """The worst case of every route (``bench/worst.py``), on a DynamoDB Local of its own:
    what ``--worst-only`` refreshes without the whole run."""
    if plan.members <= 0:
        return None
    print(f"measuring the worst case of every route (bench/worst.py, {plan.members:,} members) ...")
    with own_dynamodb(data / "dynamodb-local-worst.log") as dynamodb:
        client = local_client(dynamodb.endpoint, pool=128)
        loader = local_client(dynamodb.endpoint, pool=128)
        return worst.run(client, loader, create_tables(loader, "worst-"), plan)


def measure_probes(data: Path) -> list[dict[str, Any]]:
    """One request of each kind the service sends, on a DynamoDB Local of its own
    (``bench/probe.py``): what ``--probe-only`` refreshes without the whole run."""
    import boto3

    with own_dynamodb(data / "dynamodb-local.log") as dynamodb:
        client = boto3.client("dynamodb", endpoint_url=dynamodb.endpoint)
        Recorder().attach(client)  # every request asks for its ConsumedCapacity, as in a run
        return probe.probe(Database.connect(create_tables(client, "bench-"), client=client))


def run(plan: Plan) -> dict[str, Any]:
    import redis as _redis  # noqa: F401 - fail before the load if the bench packages are missing

    use_local_credentials()
    plan.data.mkdir(parents=True, exist_ok=True)
    begun = time.perf_counter()
    dynamodb = DynamoDBLocal.start(log_path=plan.data / "dynamodb-local.log")
    redis_server = None
    try:
        redis_server = redis_ref.RedisServer.start(log_path=plan.data / "redis.log")
        print(f"DynamoDB Local on {dynamodb.endpoint}, pid {dynamodb.pid}")
        print(f"redis-server on port {redis_server.port}, pid {redis_server.pid}")
        client = local_client(dynamodb.endpoint)
        loader_client = local_client(dynamodb.endpoint)
        settings = create_tables(client, "bench-")
        recorder = Recorder()
        recorder.attach(client)
        store = Database.connect(settings, client=client)
        service = Services(store)
        ctx = Context(plan, service, store, loader_client, recorder, redis_server.client())
        ctx.probes = probe.probe(store)
        for shards in plan.shards:
            board_id = f"bench-{shards}-shards"
            request = BoardRequest(settings=BoardSettings(shards=shards), title=f"{shards} shards")
            service.boards.put_board(board_id, request)
            ctx.boards[shards] = board_id
            ctx.settings[shards] = service.boards.settings(board_id)
        loading = 0.0
        stopped = None
        for step, planned in enumerate(plan.sizes):
            size = planned
            if step > 0 and ctx.loads:
                rate = ctx.loads[-1]["itemsPerSecond"]
                per_member = 2 * len(plan.shards) / rate  # seconds of loading per member added
                estimate = (size - ctx.loaded) * per_member
                if loading + estimate > plan.budget_s:
                    # Spend what is left of the budget on a last, smaller step, if it is worth one.
                    reachable = ctx.loaded + int((plan.budget_s - loading) / per_member)
                    reachable = reachable // 10_000 * 10_000
                    stopped = {"at": ctx.loaded, "next": size, "estimate": estimate, "spent": loading}
                    if reachable < ctx.loaded * 1.5:
                        ctx.note(
                            f"Growth stopped at {ctx.loaded:,} members: loading to {size:,} would take about "
                            f"{estimate:.0f} s more at {rate:,.0f} items/s, past the budget of "
                            f"{plan.budget_s:.0f} s of loading (BENCH_BUDGET_S); {loading:.0f} s were spent."
                        )
                        break
                    ctx.note(
                        f"Growth stopped at {reachable:,} members instead of {size:,}: loading to {size:,} "
                        f"would have taken about {estimate:.0f} s more at {rate:,.0f} items/s, past the "
                        f"budget of {plan.budget_s:.0f} s of loading (BENCH_BUDGET_S)."
                    )
                    size = reachable
            loading += grow(ctx, size)
            print(f"measuring at {size:,} members ...", flush=True)
            step_started = time.perf_counter()
            for shards in plan.shards:
                measure_top(ctx, size, shards)
                measure_cursor_walk(ctx, size, shards)
                measure_rank(ctx, size, shards)
                measure_ranks(ctx, size, shards)
                scores.measure_scores(ctx, size, shards)
            measure_redis(ctx, size)
            for shards in plan.shards:
                measure_writes(ctx, size, shards)  # last: nothing maintains the head after writes
            print(f"  measured in {time.perf_counter() - step_started:.0f} s", flush=True)
            save(ctx, plan, begun, stopped, None)
            if size != planned:
                break
        if plan.big_size > ctx.loaded and plan.big_shards in plan.shards and stopped is None:
            grow_big(ctx, plan)
            save(ctx, plan, begun, stopped, None)
        ctx.worst = measure_worst(plan.worst_plan, plan.data)
        for row in (ctx.worst or {}).get("rows", []):
            if row["exact"] is not None:
                check = f"worst case, {row['route']}: {row['case']}: service == sorted list"
                ctx.checks.append(
                    {"check": check, "size": row["members"] or 0, "shards": row["shards"], "ok": row["exact"]}
                )
        save(ctx, plan, begun, stopped, None)
        if plan.reshard_members > 0:
            print(f"re-sharding {plan.reshard_members:,} members 3 -> 17 (bench/reshardrun.py) ...")
            ctx.reshard = reshardrun.measure(plan.reshard_members, 3, 17)
            ctx.checks.append(
                {
                    "check": "re-shard: every member keyed in the new index only, on its new shard",
                    "size": plan.reshard_members,
                    "shards": 17,
                    "ok": ctx.reshard["misplaced"] == 0,
                }
            )
            save(ctx, plan, begun, stopped, None)
        if plan.churn_plan.seconds > 0:
            ctx.churn = measure_churn(plan)
            save(ctx, plan, begun, stopped, None)
        if plan.hot_plan.seconds > 0:
            ctx.hot = measure_hot(plan)
            save(ctx, plan, begun, stopped, None)
        if plan.grown_plan.members > 0:  # last: its stream is the biggest DynamoDB Local holds
            grown_client = local_client(dynamodb.endpoint)
            ctx.grown = grown.run(
                dynamodb.endpoint, grown_client, plan.grown_plan, plan.data / "grown-stack.log"
            )
            save(ctx, plan, begun, stopped, None)
        results = save(ctx, plan, begun, stopped, cold_start(ctx))
        return results
    finally:
        if redis_server is not None:
            redis_server.stop()
        dynamodb.stop()


def save(
    ctx: Context, plan: Plan, begun: float, stopped: dict[str, Any] | None, coldstart: dict[str, Any] | None
) -> dict[str, Any]:
    results = {
        "ranAt": datetime.now(UTC).isoformat(timespec="seconds"),
        "quick": plan.quick,
        "plan": {
            "sizes": list(plan.sizes),
            "budgetSeconds": plan.budget_s,
            "shards": list(plan.shards),
            "ks": list(plan.ks),
            "headKs": list(plan.head_ks),
            "pageSize": plan.page_size,
            "pages": plan.pages,
            "minRuns": plan.min_runs,
            "maxRuns": plan.max_runs,
            "cellSeconds": plan.cell_seconds,
        },
        "machine": machine(),
        "loaded": ctx.loaded,
        "stopped": stopped,
        "seconds": time.perf_counter() - begun,
        "notes": ctx.notes,
        "capabilities": ctx.capabilities,
        "loads": ctx.loads,
        "rebuilds": ctx.rebuilds,
        "checks": ctx.checks,
        "probes": ctx.probes,
        "churn": ctx.churn,
        "hot": ctx.hot,
        "grown": ctx.grown,
        "worst": ctx.worst,
        "reshard": ctx.reshard,
        "churnPlan": {
            "members": plan.churn_plan.members,
            "seconds": plan.churn_plan.seconds,
            "writesPerSecond": plan.churn_plan.writes_per_s,
            "shards": list(plan.churn_plan.shards),
        },
        "rows": ctx.rows,
        "coldStart": coldstart,
    }
    plan.data.mkdir(parents=True, exist_ok=True)
    (plan.data / "results.json").write_text(json.dumps(results, indent=1))
    return results
