"""``python -m bench.around``: what ``around`` costs next to ``rank``, alone and under
concurrent load in one process (docs/performance.md, "What around costs").

On DynamoDB Local (started here on a free port, or ``AWS_ENDPOINT_URL_DYNAMODB``), boards
of ``members`` members are bulk-loaded on each shard count with the service's own items,
their count tree and head rebuilt as ``make bench`` does. On each board:

1. **one request at a time**: ``around`` (``radius``) and ``rank`` of the members at
   several depths, ``runs`` times each after one unrecorded run, every DynamoDB request
   recorded (``bench.measure``: its round trip, its items and what DynamoDB Local bills,
   a read that finds nothing at DynamoDB's minimum); medians of requests, round trips,
   RCU and items, p50 of the time;
2. **under load**: ``clients`` threads of this process send ``around`` and ``rank`` of
   random members, one after the other, for ``seconds`` seconds, sharing the service's
   thread pools as the functions of the local stack share them (``make load`` runs every
   function in one process); p50 and p95 of each route's time.

Every answer is checked against a plain sorted list of the loaded scores.
"""

from __future__ import annotations

import argparse
import random
import statistics
import threading
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

from bench import load
from bench.measure import Recorder, Sample, create_tables, dynamodb_endpoint, percentile
from bench.worst import Model
from devstack.stack import use_local_credentials
from podium.dal import Database
from podium.models import BoardSettings, Page
from podium.validation import BoardRequest
from podium.wiring import Services

DEPTHS = (("the first", 0.0), ("1%", 0.01), ("the middle", 0.5), ("the last", 1.0))


def expected_window(model: Model, index: int, radius: int) -> list[tuple[int, str]]:
    """The model's window: ``2·radius + 1`` consecutive entries around the member,
    shifted to stay full at either end."""
    listing = model.listing
    position = listing.index(index)
    size = min(2 * radius + 1, len(listing))
    start = min(max(0, position - radius), len(listing) - size)
    return model.entries(listing[start : start + size])


def exact_window(model: Model, index: int, radius: int, page: Page) -> bool:
    return [(e.rank, e.member_id) for e in page.entries] == expected_window(model, index, radius)


def exact_rank(model: Model, index: int, answer: dict[str, Any]) -> bool:
    return bool(answer["rank"] == model.rank(index))


def load_board(
    setup: Services, store: Database, loader: Any, population: load.Population, shards: int
) -> str:
    board = f"around-{shards}-shards-{uuid.uuid4().hex[:6]}"
    setup.boards.put_board(board, BoardRequest(settings=BoardSettings(shards=shards), title=None))
    settings = setup.boards.settings(board)

    class Quiet:
        def update(self, _: int) -> None:
            pass

    members = len(population.scores)
    load.grow_board(loader, store, board, settings, population, 0, members, Quiet(), profiles=False)
    load.set_member_count(loader, store, board, members)
    setup.maintenance.rebuild_rank_structures(board)
    return board


def one_at_a_time(
    recorder: Recorder, read: Callable[[], Any], check: Callable[[Any], bool], runs: int
) -> dict[str, Any]:
    read()  # the caches warm (the board's settings, the connections)
    samples = []
    for _ in range(runs):
        with recorder.window() as window:
            answer = read()
        if not check(answer):
            raise AssertionError(f"a wrong answer: {answer}")
        samples.append(Sample.of(window))
    return {
        "requests": statistics.median(s.requests for s in samples),
        "rounds": statistics.median(s.rounds for s in samples),
        "rcu": statistics.median(s.rcu for s in samples),
        "items": statistics.median(s.items_read for s in samples),
        "p50Ms": percentile([s.seconds * 1000 for s in samples], 0.5),
    }


def under_load(
    service: Services, board: str, model: Model, radius: int, clients: int, seconds: float
) -> dict[str, dict[str, float]]:
    """``clients`` threads sending ``around`` and ``rank`` (alternately, from a random
    start) of random members for ``seconds``; each route's p50 and p95 time and count."""
    times: dict[str, list[float]] = {"around": [], "rank": []}
    lock = threading.Lock()
    stop = time.perf_counter() + seconds
    wrong: list[str] = []

    def client(number: int) -> None:
        draw = random.Random(number)
        turn = number % 2
        while time.perf_counter() < stop:
            index = draw.randrange(len(model.scores))
            member = load.member_id(index)
            route = ("around", "rank")[turn]
            turn = 1 - turn
            started = time.perf_counter()
            if route == "around":
                page = service.reads.around(board, member, radius)
                ok = exact_window(model, index, radius, page)
            else:
                ok = exact_rank(model, index, service.reads.rank(board, member))
            took = (time.perf_counter() - started) * 1000
            with lock:
                times[route].append(took)
                if not ok:
                    wrong.append(f"{route} {member}")

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if wrong:
        raise AssertionError(f"wrong answers under load: {wrong[:5]}")
    return {
        route: {"requests": len(t), "p50Ms": percentile(t, 0.5), "p95Ms": percentile(t, 0.95)}
        for route, t in times.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.around", description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=3000)
    parser.add_argument("--shards", default="3,10", help="shard counts, comma-separated")
    parser.add_argument("--radius", type=int, default=5)
    parser.add_argument("--runs", type=int, default=10, help="measured runs of each read, one at a time")
    parser.add_argument("--clients", type=int, default=16, help="threads sending reads at once")
    parser.add_argument("--seconds", type=float, default=10.0, help="how long the load lasts (0: none)")
    args = parser.parse_args()
    use_local_credentials()
    import boto3
    from botocore.config import Config

    with dynamodb_endpoint() as endpoint:
        config = Config(retries={"mode": "standard", "max_attempts": 10}, max_pool_connections=128)
        client = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=config)
        quiet = boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1", config=config)
        recorder = Recorder()
        recorder.attach(client)
        settings = create_tables(quiet, f"around{uuid.uuid4().hex[:6]}-")
        store = Database.connect(settings, client=quiet)
        setup, measured = Services(store), Services(Database.connect(settings, client=client))
        population = load.Population(seed=23)
        population.grow(args.members)
        model = Model(population.scores[: args.members])
        print(f"{args.members:,} members, radius {args.radius}, {args.runs} runs a read\n")
        print("| shards | read | member | requests | round trips | RCU | items read | p50 ms |")
        print("| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |")
        boards = {}
        for shards in (int(s) for s in args.shards.split(",")):
            board = boards[shards] = load_board(setup, store, quiet, population, shards)
            for name, fraction in DEPTHS:
                index = model.listing[min(len(model.listing) - 1, int(fraction * len(model.listing)))]
                member = load.member_id(index)
                reads: list[tuple[str, Callable[[], Any], Callable[[Any], bool]]] = [
                    (
                        f"around?radius={args.radius}",
                        partial(measured.reads.around, board, member, args.radius),
                        partial(exact_window, model, index, args.radius),
                    ),
                    ("rank", partial(measured.reads.rank, board, member), partial(exact_rank, model, index)),
                ]
                for what, read, check in reads:
                    row = one_at_a_time(recorder, read, check, args.runs)
                    print(
                        f"| {shards} | {what} | {name} | {row['requests']:.0f} | {row['rounds']:.0f} | "
                        f"{row['rcu']:.1f} | {row['items']:.0f} | {row['p50Ms']:.0f} |",
                        flush=True,
                    )
        if args.seconds > 0:
            loaded = Services(Database.connect(settings, client=quiet))
            print(f"\n{args.clients} clients for {args.seconds:.0f} s, around and rank in turn:\n")
            print("| shards | read | requests | p50 ms | p95 ms |")
            print("| ---: | --- | ---: | ---: | ---: |")
            for shards, board in boards.items():
                result = under_load(loaded, board, model, args.radius, args.clients, args.seconds)
                for route, row in result.items():
                    print(
                        f"| {shards} | {route} | {row['requests']:.0f} | {row['p50Ms']:.0f} | "
                        f"{row['p95Ms']:.0f} |",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
