"""A hot board: many warm instances read one board at once while its scores change. How
many of their reads reach DynamoDB, item by item, with each instance keeping the board, its
head and its count tree's root for ``ReadCacheSeconds`` (podium.recent) and without.

On tables of its own, one board of ``members`` on 10 shards is loaded as ``bench.churn``
loads it, its head and count tree built, and the table's stream switched on. Then, for
``seconds`` each run:

* writers set about ``writes_per_s`` scores (``bench.churn``'s mix of random changes,
  arrivals in the top and departures from it);
* a stream consumer hands each second's batch to ``Aggregator.keep_batch``, the
  aggregator's own code for the heads, counts and count trees;
* ``instances`` reader threads, each one function instance with a ``ReadService`` of its
  own, read as fast as they can: nine in ten a top 100 (served from the head), one in ten
  the rank of a random member. Every item they ask DynamoDB for is counted
  (``bench.measure.KeyReads``).

The first run keeps nothing (``keep_seconds`` 0), the second keeps for the template's 1 s.
After each, the writers stop, the stream is drained, a second passes, and each instance's
top 100 and 20 ranks are compared with the writers' own model.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import boto3
from botocore.config import Config

from bench import load
from bench.churn import (
    WINDOW_S,
    WRITER_THREADS,
    Board,
    Observed,
    _write,
    from_first_failure,
    loaded_board,
    template_read_cache_seconds,
)
from bench.measure import KeyReads, Recorder, Sample
from devstack.streams import StreamTail
from podium.config import Settings
from podium.dal import Database, schema
from podium.errors import NotFound
from podium.periods import ALL_TIME
from podium.reads import ReadService
from podium.recent import HEAD_KEEP_SECONDS
from podium.stream.aggregate import Aggregator
from podium.wiring import Services

SHARDS = 10
TOP_SHARE = 0.9  # of the reads, top 100 pages; the rest ranks
K = 100
CHECKED_RANKS = 20


@dataclass
class HotPlan:
    members: int = 20_000
    seconds: float = 20.0
    instances: int = 8
    writes_per_s: float = 40.0


@dataclass
class Served:
    tops: int = 0
    ranks: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _instance(settings: Settings, endpoint: str, reads: KeyReads, keep_seconds: float) -> ReadService:
    client = boto3.client("dynamodb", endpoint_url=endpoint, config=Config(max_pool_connections=16))
    reads.attach(client)
    db = Database.connect(settings, client=client)
    boards = Services(db).boards
    return ReadService(boards, db.boards, db.members, db.index, db.tree, keep_seconds=keep_seconds)


def _serve(
    reader: ReadService, board_id: str, members: int, stop: threading.Event, served: Served, seed: int
) -> None:
    draw = random.Random(seed)
    while not stop.is_set():
        if draw.random() < TOP_SHARE:
            reader.top(board_id, K, None, False)
            with served.lock:
                served.tops += 1
        else:
            try:
                reader.rank(board_id, load.member_id(draw.randrange(members)))
            except NotFound:  # pragma: no cover - every member has a score on a set board
                continue
            with served.lock:
                served.ranks += 1


@dataclass
class Applied:
    """What the stream consumer wrote for the records it applied."""

    records: int = 0
    wcu: float = 0.0


def _consume(
    tail: StreamTail,
    aggregator: Aggregator,
    recorder: Recorder,
    stop: threading.Event,
    seen: Observed,
    applied: Applied,
) -> None:
    retry: list[dict[str, Any]] = []
    while not stop.wait(WINDOW_S):
        batch = retry + tail.read()
        if batch:
            with recorder.window() as window:
                failed = aggregator.keep_batch(batch)
            retry = from_first_failure(batch, failed)
            seen.batches += 1
            seen.records += len(batch)
            applied.records += len(batch) - len(retry)
            applied.wcu += Sample.of(window).wcu


def _mismatch(readers: list[ReadService], board_id: str, board: Board, seed: int) -> str | None:
    """Every instance's top 100 and some ranks, against the writers' model: the first that
    differs, or None."""
    scores = dict(board.scores)
    ordered = sorted(scores.values(), reverse=True)
    draw = random.Random(seed)
    for number, reader in enumerate(readers):
        page = reader.top(board_id, K, None, False)
        if [int(e.score) for e in page.entries] != ordered[:K]:
            index = reader.top(board_id, K, None, False, consistent=True)
            got = [int(e.score) for e in page.entries]
            padded = got + [-1] * K
            where = next(i for i, expected in enumerate(ordered[:K]) if padded[i] != expected)
            return (
                f"instance {number}: the top {K} from the head differs from the model at #{where + 1} "
                f"({got[where : where + 3]} != {ordered[where : where + 3]}); from the index it "
                + ("equals" if [int(e.score) for e in index.entries] == ordered[:K] else "differs from")
                + " the model"
            )
        for entry in page.entries:
            if entry.rank != 1 + sum(1 for s in ordered[:K] if s > entry.score):
                return f"instance {number}: {entry.member_id} ranked {entry.rank} in the top"
        for _ in range(CHECKED_RANKS // len(readers) + 1):
            member = draw.randrange(len(scores))
            answer = reader.rank(board_id, load.member_id(member))
            expected = 1 + sum(1 for s in ordered if s > scores[member])
            if answer["rank"] != expected:
                counted = reader.rank(board_id, load.member_id(member), consistent=True)["rank"]
                return (
                    f"instance {number}: {load.member_id(member)} (score {scores[member]}, the item's "
                    f"{answer['score']}) ranked {answer['rank']}, not {expected}; on the index: {counted}"
                )
    return None


def _drain(seen: Observed) -> None:
    """Until the stream consumer has found nothing new for three of its windows."""
    quiet, last = 0, -1
    while quiet < 3:
        time.sleep(WINDOW_S)
        quiet, last = (quiet + 1, last) if seen.records == last else (0, seen.records)


def _run(
    client: Any,
    streams: Any,
    settings: Settings,
    endpoint: str,
    board_id: str,
    board: Board,
    arn: str,
    plan: HotPlan,
    keep_seconds: float,
) -> dict[str, Any]:
    store = Database.connect(settings, client=client)
    recorder = Recorder()  # the consumer's own client: what keeping the board costs
    consumer_client = boto3.client(
        "dynamodb", endpoint_url=endpoint, config=Config(retries={"mode": "standard", "max_attempts": 10})
    )
    consuming = Database.connect(settings, client=recorder.attach(consumer_client))
    reads = KeyReads()
    readers = [_instance(settings, endpoint, reads, keep_seconds) for _ in range(plan.instances)]
    tail = StreamTail(streams, arn)
    tail.read()  # from now on
    seen, served, applied = Observed(), Served(), Applied()
    stop_writes, stop_reads, stop_stream = threading.Event(), threading.Event(), threading.Event()
    aggregator = Aggregator(consuming, Services(consuming).boards.settings, lambda: datetime.now(UTC))
    consuming_args = (tail, aggregator, recorder, stop_stream, seen, applied)
    consumer = threading.Thread(target=_consume, args=consuming_args)
    rate = plan.writes_per_s
    writers = [
        threading.Thread(target=_write, args=(Services(store), board_id, board, rate, stop_writes, seen))
        for _ in range(WRITER_THREADS)
    ]
    servers = [
        threading.Thread(target=_serve, args=(reader, board_id, plan.members, stop_reads, served, i))
        for i, reader in enumerate(readers)
    ]
    print(f"{plan.instances} instances read {board_id}, keeping {keep_seconds:g} s, {plan.seconds:.0f} s")
    for thread in [consumer, *writers]:
        thread.start()
    time.sleep(2 * WINDOW_S)  # the writes flowing before the reads are counted
    reads.clear()
    started = time.monotonic()
    for thread in servers:
        thread.start()
    time.sleep(plan.seconds)
    stop_reads.set()
    for thread in servers:
        thread.join()
    elapsed = time.monotonic() - started
    counted = _counted(reads, board_id)
    stop_writes.set()
    for thread in writers:
        thread.join()
    _drain(seen)  # the last batches applied
    stop_stream.set()
    consumer.join()
    time.sleep(keep_seconds)  # what the instances keep has expired
    mismatch = _mismatch(readers, board_id, board, seed=int(keep_seconds * 10) + 1)
    per_s = {name: n / elapsed for name, n in counted.items()}
    return {
        "keepSeconds": keep_seconds,
        "instances": plan.instances,
        "seconds": elapsed,
        "tops": served.tops,
        "ranks": served.ranks,
        "readsPerSecond": (served.tops + served.ranks) / elapsed,
        "writesPerSecond": seen.writes / elapsed,
        "dynamodbPerSecond": per_s,
        "perInstancePerSecond": {
            name: per_s[name] / plan.instances for name in ("board", "head", "root") if name in per_s
        },
        "aggregatorWcuPerRecord": applied.wcu / applied.records if applied.records else None,
        "exactAfter": mismatch is None,
        "mismatch": mismatch,
    }


def _counted(reads: KeyReads, board_id: str) -> dict[str, float]:
    board_pk = f"{schema.BOARD}{board_id}"
    tree = schema.tree_pk(board_id, ALL_TIME)
    root = reads.of(tree, schema.TREE_ROOT)
    return {
        "board": reads.of(board_pk, schema.BOARD_ITEM),
        # the primary head, and each instance's copy of it (podium.dal.structures)
        "head": reads.of(board_pk, f"{schema.HEAD}{ALL_TIME}")
        + reads.starting(f"{schema.HEAD_COPY}{board_id}{schema.SEPARATOR}"),
        "root": root,
        # the nodes below the root, spread over keys of their own
        "treeBelowRoot": reads.starting(f"{tree}{schema.SEPARATOR}"),
        "scores": reads.starting(f"{schema.MEMBER}{board_id}{schema.SEPARATOR}"),
        "queries": sum(reads.queries.values()),
    }


def run(client: Any, streams: Any, settings: Settings, endpoint: str, plan: HotPlan) -> dict[str, Any]:
    board_id = "hot-board"
    population, arn = loaded_board(client, settings, board_id, SHARDS, plan.members, seed=99)
    board = Board(population.scores)
    runs = [
        _run(client, streams, settings, endpoint, board_id, board, arn, plan, keep)
        for keep in (0.0, template_read_cache_seconds())
    ]
    client.update_table(TableName=settings.table_name, StreamSpecification={"StreamEnabled": False})
    return {"members": plan.members, "shards": SHARDS, "k": K, "topShare": TOP_SHARE, "runs": runs}


LAYOUT_CACHE_SECONDS = 5.0  # the template's LAYOUT_CACHE_SECONDS: each instance's layout read


def bounds(keep_seconds: float, seconds: float) -> dict[str, float]:
    """What an instance may read of each kept item a second over a run of ``seconds``: the
    head (its copy) once every HEAD_KEEP_SECONDS at most, the board and the root once a
    kept period, and its layout once every LAYOUT_CACHE_SECONDS; each once more for the
    period the run began in the middle of."""

    def per_second(every: float) -> float:
        return (seconds / every + 1) / seconds

    head = per_second(min(keep_seconds, HEAD_KEEP_SECONDS))
    once = per_second(keep_seconds)
    return {"board": once + per_second(LAYOUT_CACHE_SECONDS), "head": head, "root": once}


def kept_run(hot: dict[str, Any]) -> dict[str, Any]:
    return next(run for run in hot["runs"] if run["keepSeconds"] > 0)


def target_row(hot: dict[str, Any]) -> tuple[str, str, bool]:
    """The target's line in docs/benchmarks.md: (target, measured, met)."""
    kept, cold = kept_run(hot), next(run for run in hot["runs"] if run["keepSeconds"] == 0)
    limit = bounds(kept["keepSeconds"], kept["seconds"])
    per = kept["perInstancePerSecond"]
    exact = all(r["exactAfter"] for r in hot["runs"])
    met = all(per.get(name, 0.0) <= limit[name] for name in limit) and exact
    saved = cold["dynamodbPerSecond"]["head"] / max(kept["dynamodbPerSecond"]["head"], 1e-9)
    return (
        "a hot board: its board item and count-tree root read from DynamoDB at most once a kept second "
        "per instance (ReadCacheSeconds) besides its layout, its head (a copy) at most once every "
        f"{HEAD_KEEP_SECONDS:g} s, exact once "
        "writes stop",
        f"per instance a second: board {per.get('board', 0):.2f}, head {per.get('head', 0):.2f}, root "
        f"{per.get('root', 0):.2f} ({kept['instances']} instances, {kept['readsPerSecond']:,.0f} reads/s; "
        f"{saved:,.0f} x fewer head reads than keeping nothing); " + ("exact" if exact else "**not exact**"),
        met,
    )


def section(hot: dict[str, Any], table: Any) -> list[str]:
    """docs/benchmarks.md's "A hot board" (``table`` is bench.report's table maker)."""
    names = (
        ("board", "board item"),
        ("head", "head"),
        ("root", "tree root"),
        ("treeBelowRoot", "tree nodes below the root"),
        ("scores", "members' score items"),
        ("queries", "index queries"),
    )
    lines = []
    for run in hot["runs"]:
        per_s = run["dynamodbPerSecond"]
        lines.append(
            [
                f"{run['keepSeconds']:g} s",
                f"{run['readsPerSecond']:,.0f}",
                *(f"{per_s.get(name, 0.0):,.1f}" for name, _ in names),
                "yes" if run["exactAfter"] else "**no**",
            ]
        )
    kept = kept_run(hot)
    return [
        "## A hot board",
        "",
        f"One board of {hot['members']:,} members on {hot['shards']} shards, read by "
        f"{kept['instances']} function instances at once (`bench/hot.py`: a thread each, with a "
        "`ReadService` of its own, as a warm Lambda instance has), nine reads in ten a top "
        f"{hot['k']} served from the head and one in ten a rank, for {kept['seconds']:.0f} s, while "
        f"writers set about {kept['writesPerSecond']:.0f} scores a second and a stream consumer applies "
        "them (`Aggregator.keep_batch`). Every item the readers ask DynamoDB for is counted. First with "
        "nothing kept in the instances (`ReadCacheSeconds` 0), then as the template deploys it. "
        "After each run the writers stop, the stream is applied, the kept second passes, and every "
        "instance's top and 20 ranks are compared with the writers' own model.",
        "",
        "DynamoDB reads a second, by item:",
        "",
        *table(["kept", "API reads/s", *(label for _, label in names), "exact after"], lines),
        "",
        "Keeping the board (heads, counts and count tree) cost the stream consumer "
        + ", ".join(
            f"{run['aggregatorWcuPerRecord']:.2f} WCU a record in the run kept {run['keepSeconds']:g} s"
            for run in hot["runs"]
            if run.get("aggregatorWcuPerRecord") is not None
        )
        + " (DynamoDB Local's consumed capacity): the cheap end, as this board's updates crowd into a few "
        "leaves at the top; a big board's updates that land anywhere cost more (`make bench-treewrites`, "
        "docs/capacity.md: the planner's model of the count tree's writes).",
        "",
        "This machine serves a few hundred reads a second in all; on AWS a hot board's instances "
        "number about its read rate times the time a read takes, and each reads the kept items as "
        "often as above (docs/capacity.md, Hot boards, has the planner's figures for 100,000 top "
        "reads and 10,000 ranks a second).",
    ]
