"""``make bench-streams N=2000``: how fast the local stack's stream consumers work through
the records of an import, and what each record costs them in DynamoDB requests.

    python -m bench.streamrun [--members 2000] [--workers 16] [--profile]

It starts ``make run``'s stack in this process on a free port (tokens not checked),
creates a board, stops the stream pollers, and puts ``--members`` members with a score
and a little data, as ``podium import`` does (one ``PUT .../members/{m}`` each, on
``--workers`` threads). Then it lets each consumer alone work through the stream: first
the aggregator, then the notifier, so that every DynamoDB request made meanwhile is that
consumer's. For each it prints the records handed to it, how long it took (from the
pollers' start to the last record delivered), records a second, and per record the
DynamoDB requests (by operation), RCU and WCU as DynamoDB Local reports them. Finally it
checks the board: ``memberCount`` against the members put, and its top against the
scores put, sorted. ``--profile`` adds where the consumer's thread spent its time
(cProfile of the poller's thread: waits on DynamoDB Local show as socket reads).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from contextlib import redirect_stderr, redirect_stdout
from decimal import Decimal
from io import StringIO
from pathlib import Path
from typing import Any

from bench.importrun import sorted_top
from bench.loadrun import machine, say
from bench.measure import Recorder, Window
from podium.dal import Database
from podium_client import PodiumClient

SETTLE_SECONDS = 3.0  # a consumer is done when it delivered nothing more for this long
DRAIN_TIMEOUT = 1800.0
TOP = 1_000


def member_scores(members: int, seed: int) -> dict[str, Decimal]:
    """Random scores of three decimals, as ``bench.importrun`` writes them."""
    chosen = random.Random(seed)
    return {
        f"member-{number:07d}": Decimal(chosen.randrange(-(10**6), 10**9)).scaleb(-3)
        for number in range(members)
    }


def put_members(url: str, board: str, scores: dict[str, Decimal], workers: int) -> float:
    """Put every member (score and data) on ``workers`` threads; the seconds it took."""
    local = threading.local()

    def put(item: tuple[int, tuple[str, Decimal]]) -> None:
        if not hasattr(local, "client"):
            local.client = PodiumClient(url, timeout=60)
        number, (member, score) = item
        local.client.put_member(board, member, score=score, data={"team": f"t{number % 16}"})

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(put, enumerate(scores.items())))
    return time.monotonic() - started


class Watched:
    """When ``poller`` last handed a batch over, and since when the poll in hand runs,
    from its thread; with ``profile``, a profile of that thread while it reads and delivers
    (cProfile works per thread, so it is switched on and off inside it)."""

    def __init__(self, poller: Any, profile: cProfile.Profile | None) -> None:
        self.poller = poller
        self.profile = profile
        self.last_batch = time.monotonic()
        self.polling_since: float | None = None
        self._poll_shard = poller._poll_shard

    def __enter__(self) -> Watched:
        self.poller._poll_shard = self._poll
        return self

    def __exit__(self, *exc: object) -> None:
        del self.poller._poll_shard  # the class's method again

    def _poll(self, state: Any) -> bool:
        self.polling_since = time.monotonic()
        if self.profile is not None:
            self.profile.enable()
        try:
            busy = bool(self._poll_shard(state))
        finally:
            if self.profile is not None:
                self.profile.disable()
            self.polling_since = None
        if busy:
            self.last_batch = time.monotonic()
        return busy

    def idle(self) -> bool:
        """No batch for ``SETTLE_SECONDS``, and no poll in hand for long (a batch being
        delivered)."""
        now = time.monotonic()
        polling = self.polling_since
        return now - self.last_batch > SETTLE_SECONDS and (polling is None or now - polling < 1.5)


def drain(poller: Any, recorder: Recorder, profile: bool) -> tuple[int, float, Window, str]:
    """Let ``poller`` alone read on until it is idle: the records it delivered, the seconds
    until its last batch, its requests, its profile (empty without ``profile``)."""
    before = poller.delivered
    profiler = cProfile.Profile() if profile else None
    with Watched(poller, profiler) as watched, recorder.window() as window:
        started = time.monotonic()
        poller.pause(False)
        while not watched.idle() and time.monotonic() - started < DRAIN_TIMEOUT:
            time.sleep(0.05)
        poller.pause(True)
        while watched.polling_since is not None:
            time.sleep(0.05)
    report = ""
    if profiler is not None:
        text = StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(45)
        report = text.getvalue()
    return poller.delivered - before, watched.last_batch - started, window, report


def describe(name: str, records: int, seconds: float, window: Window) -> None:
    calls = [call for call in window.calls if call.ended <= window.ended]
    per = max(records, 1)
    kinds = Counter(call.operation for call in calls)
    rcu = sum(call.billed for call in calls if call.is_read)
    wcu = sum(call.capacity for call in calls if not call.is_read)
    say(
        f"{name}: {records:,} records in {seconds:,.1f} s: {records / max(seconds, 1e-9):,.1f} records/s; "
        f"per record {len(calls) / per:.2f} requests, {rcu / per:.2f} RCU, {wcu / per:.2f} WCU"
    )
    say(f"  requests per record: {', '.join(f'{op} {n / per:.2f}' for op, n in kinds.most_common())}")


def check_board(client: PodiumClient, board: str, scores: dict[str, Decimal]) -> list[str]:
    problems = []
    count = client.get_board(board).member_count
    if count != len(scores):
        problems.append(f"memberCount is {count:,}, {len(scores):,} members were put")
    page = client.top(board, limit=min(TOP, len(scores)), consistent=True)
    if [(e.rank, e.member_id, e.score) for e in page.entries] != sorted_top(scores, TOP):
        problems.append("the top differs from the scores put, sorted")
    return problems


def run(stack: Any, members: int, workers: int, seed: int, profile: bool) -> list[str]:
    from podium import wiring

    for poller in stack.pollers:
        poller.pause(True)
    scores = member_scores(members, seed)
    board = f"bench-streams-{uuid.uuid4().hex[:8]}"
    with PodiumClient(stack.url, timeout=60) as client:
        client.create_board(board, title="make bench-streams")
        time.sleep(1.0)  # the board's own records (none reach a consumer) are behind us
        seconds = put_members(stack.url, board, scores, workers)
        rate = members / seconds
        say(f"put {members:,} members in {seconds:,.1f} s ({rate:,.1f} members/s), consumers paused")
        recorder = Recorder()
        db = wiring.services().db
        assert isinstance(db, Database)
        recorder.attach(db.tables.client)  # the process's one DynamoDB client: the consumers' too
        for poller in stack.pollers:  # the aggregator first: memberCount is its work
            name = poller.consumer.function
            records, took, window, report = drain(poller, recorder, profile)
            describe(name, records, took, window)
            if report:
                say(f"  where {name}'s thread spent its time:\n{report}")
        problems = check_board(client, board, scores)
    if not problems:
        say(f"memberCount {members:,} and the top {min(TOP, members):,} equal the members put")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.streamrun", description=__doc__)
    parser.add_argument("--members", type=int, default=2_000, help="members to put (default 2,000)")
    parser.add_argument("--workers", type=int, default=16, help="threads putting them (default 16)")
    parser.add_argument("--seed", type=int, default=1, help="of the random scores (default 1)")
    parser.add_argument("--profile", action="store_true", help="cProfile each consumer's thread")
    args = parser.parse_args(argv)
    load_average = os.getloadavg()
    from devstack.stack import Stack

    stack = Stack(port=0, table_prefix=f"str{uuid.uuid4().hex[:6]}-", announce=False, auth=False)
    with tempfile.TemporaryDirectory(prefix="podium-bench-streams-") as folder:
        log_path = Path(folder) / "stack.log"
        with log_path.open("w") as log, redirect_stdout(log), redirect_stderr(log):
            try:
                stack.start()
                problems = run(stack, args.members, args.workers, args.seed, args.profile)
            finally:
                stack.stop()
    say(f"machine: {machine(load_average)}")
    for problem in problems:
        say(f"FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
