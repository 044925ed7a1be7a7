"""Rank, ranks and around on a board grown the way users grow one: through the API, with
the stream keeping its head and count tree, and read while writers run.

The rest of the bench loads boards in bulk and rebuilds their head and count tree from the
index, which no user does. Here the local stack (``make run``'s, on the bench's DynamoDB
Local, in this process) serves the API and runs the stream consumers with the template's
batch settings:

1. ``writers`` clients add ``members`` members to a ``set`` board with ``PUT
   .../members/{id}`` and a score (the service's own write path), all at once;
2. once ``memberCount`` has settled, the reads are measured on that board: ``rank`` at
   several depths, ``POST .../ranks`` with 100 members drawn at random, ``around`` with
   radius 50, an exact top 1,000 and a page of 100 after a cursor;
3. then ``churn_writers`` clients set random scores (``POST .../score``) for
   ``churn_s`` seconds while a reader measures the same reads again and again;
4. when the writers stop and the stream has caught up, every answer measured is checked
   against a plain sorted list of the scores the writers set.

Costs come from DynamoDB Local's ``ConsumedCapacity`` for every request the reader's
service sends during a read (``bench.measure``), with reads that find nothing counted at
DynamoDB's minimum.
"""

from __future__ import annotations

import math
import os
import random
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, redirect_stdout
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import requests

from bench.measure import Recorder, Sample, percentile, summarise
from devstack import template as template_module
from devstack.stack import Stack
from podium.config import Settings
from podium.dal import Database
from podium.wiring import Services

BOARD = "grown"
TOP_SCORE = 1_000_000
DEPTHS = (("1", 0.0), ("1%", 0.01), ("25%", 0.25), ("50%", 0.50), ("95%", 0.95), ("last", 1.0))
RANKS_IDS = 100
RADIUS = 50
TIMEOUT = 60


@dataclass
class GrownPlan:
    members: int = 20_000
    shards: int = 10
    writers: int = 16
    churn_s: float = 60.0
    churn_writers: int = 4


class Scores:
    """The scores the writers set, under a lock: the model every answer is checked against."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.scores: dict[str, int] = {}

    def set(self, member: str, score: int) -> None:
        with self.lock:
            self.scores[member] = score

    def listing(self) -> list[str]:
        """Members in listing order: better score first, ties by member id."""
        with self.lock:
            return sorted(self.scores, key=lambda m: (-self.scores[m], m))

    def rank(self, member: str) -> int:
        with self.lock:
            mine = self.scores[member]
            return 1 + sum(1 for score in self.scores.values() if score > mine)


def member_id(index: int) -> str:
    return f"user-{index:06d}"


def planned_score(draw: random.Random) -> int:
    """A member's first score: one in ten a multiple of 1,000 (so scores tie), else any."""
    return draw.randrange(TOP_SCORE // 1000) * 1000 if draw.random() < 0.1 else draw.randrange(TOP_SCORE)


@contextmanager
def local_stack(endpoint: str, prefix: str, log: Path) -> Iterator[Stack]:
    """``make run``'s stack on the bench's DynamoDB Local, with tables of its own. What its
    functions print (their logs and metrics) goes to ``log``, not to the bench's console."""
    saved = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")
    os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = endpoint
    stack = Stack(port=0, table_prefix=prefix, announce=False)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out, redirect_stdout(out):
        try:
            stack.start()
            yield stack
        finally:
            stack.stop()
            if saved is None:
                os.environ.pop("AWS_ENDPOINT_URL_DYNAMODB", None)
            else:
                os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = saved


def say(text: str) -> None:
    """Progress on the console, past the stack's redirected output."""
    print(text, file=sys.__stdout__, flush=True)


def _in_parallel(threads: int, work: Callable[[int], None], count: int) -> None:
    with ThreadPoolExecutor(max_workers=threads) as pool:
        list(pool.map(work, range(count)))


def admin_session(headers: dict[str, str]) -> requests.Session:
    """A client's connection, carrying a game server's admin token (as clients of a
    deployed stack do: the edge authorizer checks it, then answers from its cache)."""
    session = requests.Session()
    session.headers.update(headers)
    return session


def admin_headers(stack: Stack) -> dict[str, str]:
    assert stack.issuer is not None
    token = stack.issuer.sign(stack.issuer.claims("admin", None, 24 * 3600))
    return {"Authorization": f"Bearer {token}"}


def grow(url: str, plan: GrownPlan, scores: Scores, headers: dict[str, str]) -> float:
    """Add the members over HTTP from ``writers`` clients at once; the seconds it took."""
    sessions = threading.local()
    draw = random.Random(11)
    planned = [planned_score(draw) for _ in range(plan.members)]

    def add(index: int) -> None:
        session = getattr(sessions, "session", None) or admin_session(headers)
        sessions.session = session
        member = member_id(index)
        response = session.put(
            f"{url}/boards/{BOARD}/members/{member}", json={"score": planned[index]}, timeout=TIMEOUT
        )
        response.raise_for_status()
        scores.set(member, planned[index])

    started = time.perf_counter()
    _in_parallel(plan.writers, add, plan.members)
    return time.perf_counter() - started


def wait_for(check: Callable[[], bool], what: str, timeout: float = 1800.0) -> float:
    started = time.perf_counter()
    while not check():
        if time.perf_counter() - started > timeout:
            raise RuntimeError(f"gave up waiting for {what} after {timeout:.0f} s")
        time.sleep(0.5)
    return time.perf_counter() - started


class Reader:
    """The service as a function runs it, on a client whose every request is recorded."""

    def __init__(self, client: Any, settings: Settings) -> None:
        self.recorder = Recorder()
        self.recorder.attach(client)
        self.service = Services(Database.connect(settings, client=client))

    def measured(self, read: Callable[[], Any]) -> tuple[Sample, Any]:
        with self.recorder.window() as window:
            answer = read()
        return Sample.of(window), answer


def _reads(
    reader: Reader, scores: Scores, draw: random.Random
) -> list[tuple[str, str, Callable[[], Any], Any]]:
    """The reads to measure on the board as it is: (pattern, variant, read, what to check)."""
    listing = scores.listing()
    size = len(listing)
    service = reader.service
    found: list[tuple[str, str, Callable[[], Any], Any]] = []
    for name, fraction in DEPTHS:
        member = listing[max(1, min(size, math.ceil(fraction * size))) - 1]
        found.append(("rank", name, partial(service.reads.rank, BOARD, member), ("rank", member)))
    friends = draw.sample(listing, RANKS_IDS)
    found.append(("ranks", "100 at random", lambda: service.reads.ranks(BOARD, friends), ("ranks", friends)))
    for name, fraction in (("1%", 0.01), ("50%", 0.5), ("last", 1.0)):
        member = listing[max(1, min(size, math.ceil(fraction * size))) - 1]
        found.append(
            ("around", name, partial(service.reads.around, BOARD, member, RADIUS), ("around", member))
        )
    found.append(
        (
            "top",
            "1,000 consistent",
            lambda: service.reads.top(BOARD, 1000, None, False, consistent=True),
            ("top", None),
        )
    )
    first = service.reads.top(BOARD, 100, None, False, consistent=True)
    found.append(
        (
            "top",
            "100 after a cursor",
            partial(service.reads.top, BOARD, 100, first.next_cursor, False),
            ("page", None),
        )
    )
    return found


def check(scores: Scores, kind: tuple[str, Any], answer: Any) -> bool:
    """Whether an answer is the model's, on a board whose writes have all been applied."""
    what, subject = kind
    listing = scores.listing()
    if what == "rank":
        return bool(answer["rank"] == scores.rank(subject))
    if what == "ranks":
        expected = [(scores.rank(m), m) for m in listing if m in set(subject)]
        return [(e.rank, e.member_id) for e in answer] == expected
    if what == "around":
        position = listing.index(subject)
        size = min(2 * RADIUS + 1, len(listing))
        start = min(max(0, position - RADIUS), len(listing) - size)
        expected = [(scores.rank(m), m) for m in listing[start : start + size]]
        return [(e.rank, e.member_id) for e in answer.entries] == expected
    if what == "top":
        return [(e.rank, e.member_id) for e in answer.entries] == [
            (scores.rank(m), m) for m in listing[:1000]
        ]
    return True  # a page after a cursor: checked by the test suite's properties


def run(endpoint: str, client: Any, plan: GrownPlan, log: Path) -> dict[str, Any]:
    spec = template_module.read("grown-")
    settings = spec.settings()
    scores = Scores()
    draw = random.Random(3)
    with local_stack(endpoint, "grown-", log) as stack:
        url = stack.url
        headers = admin_headers(stack)
        requests.put(
            f"{url}/boards/{BOARD}",
            json={"operator": "set", "shards": plan.shards},
            headers=headers,
            timeout=TIMEOUT,
        ).raise_for_status()
        say(f"growing {BOARD} to {plan.members:,} members through the API ({plan.writers} clients) ...")
        grow_s = grow(url, plan, scores, headers)

        def counted() -> bool:
            board = requests.get(f"{url}/boards/{BOARD}", headers=headers, timeout=TIMEOUT).json()
            return bool(board["memberCount"] == plan.members)

        # Once the stream has caught up, the answers equal the model's (memberCount alone is
        # not the sign: the count can be whole while the tree's last reports are in flight)
        def caught_up() -> bool:
            listing = scores.listing()
            probe = [listing[n * (len(listing) - 1) // 4] for n in range(5)]
            return all(reader.service.reads.rank(BOARD, m)["rank"] == scores.rank(m) for m in probe)

        reader = Reader(client, settings)
        settle_s = wait_for(counted, "memberCount")
        settle_s += wait_for(caught_up, "the stream to catch up")
        time.sleep(3)
        tree = reader.service.db.tree.all_nodes(BOARD, "all")
        settled = []
        for pattern, variant, read, kind in _reads(reader, scores, draw):
            read()  # warm
            sample, answer = reader.measured(read)
            settled.append(
                {
                    "pattern": pattern,
                    "variant": variant,
                    **summarise([sample]),
                    "exact": check(scores, kind, answer),
                }
            )
        say(f"  grown in {grow_s:.0f} s, caught up {settle_s:.0f} s later; a count tree of {len(tree)} nodes")

        # While writers set scores: the same reads, again and again
        stop = threading.Event()
        writes = [0]

        def write(seed: int) -> None:
            session = admin_session(headers)
            local = random.Random(seed)
            while not stop.is_set():
                member = member_id(local.randrange(plan.members))
                score = local.randrange(TOP_SCORE)
                response = session.post(
                    f"{url}/boards/{BOARD}/members/{member}/score", json={"value": score}, timeout=TIMEOUT
                )
                response.raise_for_status()
                scores.set(member, score)
                writes[0] += 1

        threads = [threading.Thread(target=write, args=(seed,)) for seed in range(plan.churn_writers)]
        for thread in threads:
            thread.start()
        samples: dict[tuple[str, str], list[Sample]] = {}
        say(f"reading while {plan.churn_writers} clients write, for {plan.churn_s:.0f} s ...")
        started = time.perf_counter()
        while time.perf_counter() - started < plan.churn_s:
            for pattern, variant, read, _ in _reads(reader, scores, draw):
                sample, _answer = reader.measured(read)
                samples.setdefault((pattern, variant), []).append(sample)
        stop.set()
        for thread in threads:
            thread.join()
        churn_s = time.perf_counter() - started

        # Once the stream has caught up, the answers equal the model's again
        drain_s = wait_for(caught_up, "the stream to catch up")
        time.sleep(3)
        exact_after = []
        for pattern, variant, read, kind in _reads(reader, scores, draw):
            exact_after.append({"pattern": pattern, "variant": variant, "exact": check(scores, kind, read())})
        tree = reader.service.db.tree.all_nodes(BOARD, "all")
    # What DynamoDB Local keeps of the stream slows what runs after: switch it off.
    client.update_table(TableName=settings.table, StreamSpecification={"StreamEnabled": False})
    while_writing = []
    for (pattern, variant), runs in samples.items():
        rcus = [s.rcu for s in runs]
        while_writing.append(
            {
                "pattern": pattern,
                "variant": variant,
                "reads": len(runs),
                "rcuP50": percentile(rcus, 0.5),
                "rcuP95": percentile(rcus, 0.95),
                "rcuMax": max(rcus),
                "itemsMax": max(s.items_read for s in runs),
                "roundsMax": max(s.rounds for s in runs),
                "p50Ms": percentile([s.seconds * 1000 for s in runs], 0.5),
            }
        )
    return {
        "members": plan.members,
        "shards": plan.shards,
        "writers": plan.writers,
        "growSeconds": grow_s,
        "settleSeconds": settle_s,
        "settled": settled,
        "churnSeconds": churn_s,
        "churnWriters": plan.churn_writers,
        "churnWrites": writes[0],
        "whileWriting": while_writing,
        "drainSeconds": drain_s,
        "exactAfter": exact_after,
        "treeNodes": len(tree),
        "treeLevels": 1 + max(node.level for node in tree),
    }


def main() -> None:
    """``python -m bench.grown [members] [churn seconds]``: this measurement alone, printed."""
    import json

    import boto3
    from botocore.config import Config

    from devstack.dynamodb_local import DynamoDBLocal
    from devstack.stack import use_local_credentials

    use_local_credentials()
    members = int(sys.argv[1]) if len(sys.argv) > 1 else GrownPlan.members
    churn_s = float(sys.argv[2]) if len(sys.argv) > 2 else GrownPlan.churn_s
    dynamodb = DynamoDBLocal.start()
    try:
        config = Config(retries={"mode": "standard", "max_attempts": 10}, max_pool_connections=64)
        client = boto3.client("dynamodb", endpoint_url=dynamodb.endpoint, config=config)
        plan = GrownPlan(members=members, churn_s=churn_s)
        result = run(dynamodb.endpoint, client, plan, Path("bench-data") / "grown-stack.log")
        print(json.dumps(result, indent=1))
    finally:
        dynamodb.stop()


if __name__ == "__main__":
    main()
