"""``make bench-fresh``: how fresh the ranks of a board are while it is written through the
local stack, as the contract states it: every rank reflects every write acknowledged more
than 2 seconds before it was asked.

    python -m bench.fresh [--members 20000] [--rate 200] [--burst 2] [--clients 16]

It starts ``make run``'s stack as a process of its own (``python -m devstack``, its own
DynamoDB Local, stopped by PID after) and grows a ``set`` board through the API in bursts:
``--clients`` clients offer writes at ``--rate`` a second for ``--burst`` seconds (new
members with a score, and a share of score changes of members already there, each member
written at most once a burst), the stack takes them at its own pace. Two seconds after the
last write of a burst was acknowledged (and with ``--early 1`` a first time after one
second, to show the margin: those reads load the stack too), it asks ``rank`` at six
depths, ``around`` the middle member, ``POST ranks`` of 100 members and the top 100, and
compares every answer with a plain sorted list of the scores acknowledged so far. It
prints each burst's writes, the rate the stack took them at, and what was not exact, then
a summary as JSON.

tests/e2e/test_freshness.py runs the same bursts on a smaller board and asserts that every
answer is exact.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import threading
import time
from bisect import bisect_left
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

TIMEOUT = 60
DEPTHS = (0.0, 0.25, 0.5, 0.75, 0.95, 1.0)


@dataclass
class FreshPlan:
    members: int = 20_000
    rate: float = 200.0  # writes offered a second
    burst_s: float = 2.0
    clients: int = 16
    updates: float = 0.3  # the share of a burst's writes that change a member already there
    wait_s: float = 2.0  # after a burst's last acknowledged write, before the reads
    early_s: float | None = None  # a first look this long after it, to show the margin (None: none)
    seed: int = 7


@dataclass
class Burst:
    writes: int
    seconds: float
    members: int
    answers: int
    wrong: list[str] = field(default_factory=list)
    early: list[str] | None = None  # what was not exact at the first look (None: not looked)

    @property
    def rate(self) -> float:
        return self.writes / self.seconds if self.seconds else 0.0


class Model:
    """The scores the stack acknowledged, and the listing they make (better first: higher
    scores, ties by member id)."""

    def __init__(self) -> None:
        self.scores: dict[str, int] = {}
        self.lock = threading.Lock()

    def set(self, member: str, score: int) -> None:
        with self.lock:
            self.scores[member] = score

    def listing(self) -> tuple[list[str], Callable[[str], int]]:
        """The members in listing order, and each one's rank (1 + those strictly better)."""
        with self.lock:
            scores = dict(self.scores)
        ordered = sorted(scores, key=lambda m: (-scores[m], m))
        lowered = sorted(-s for s in scores.values())
        return ordered, lambda member: 1 + bisect_left(lowered, -scores[member])


def run_bursts(
    url: str,
    board: str,
    plan: FreshPlan,
    headers: dict[str, str] | None = None,
    report: Callable[[Burst], None] | None = None,
) -> list[Burst]:
    """Grow ``board`` (created here) to ``plan.members`` in bursts, checking after each."""
    draw = random.Random(plan.seed)
    model = Model()
    local = threading.local()

    def session() -> requests.Session:
        found: requests.Session | None = getattr(local, "session", None)
        if found is None:
            found = local.session = requests.Session()
            found.headers.update(headers or {})
        return found

    created = requests.put(
        f"{url}/boards/{board}", json={"operator": "set"}, headers=headers, timeout=TIMEOUT
    )
    created.raise_for_status()

    def write(member: str, score: int, new: bool) -> float:
        if new:
            answer = session().put(
                f"{url}/boards/{board}/members/{member}", json={"score": score}, timeout=TIMEOUT
            )
        else:
            path = f"{url}/boards/{board}/members/{member}/score"
            answer = session().post(path, json={"value": score}, timeout=TIMEOUT)
        answer.raise_for_status()
        model.set(member, score)
        return time.monotonic()

    bursts: list[Burst] = []
    added = 0
    with ThreadPoolExecutor(plan.clients) as pool:
        while added < plan.members:
            count = int(plan.rate * plan.burst_s)
            known = list(model.scores)
            changed = draw.sample(known, min(len(known), int(count * plan.updates)))
            fresh = [
                f"m{index:06d}" for index in range(added, min(plan.members, added + count - len(changed)))
            ]
            added += len(fresh)
            writes = [(m, False) for m in changed] + [(m, True) for m in fresh]
            draw.shuffle(writes)
            started = time.monotonic()
            futures = []
            for position, (member, new) in enumerate(writes):
                time.sleep(max(0.0, started + position / plan.rate - time.monotonic()))
                futures.append(pool.submit(write, member, draw.randrange(1_000_000), new))
            last = max(future.result() for future in futures)
            burst = Burst(len(writes), last - started, len(model.scores), 0)
            if plan.early_s is not None:
                time.sleep(max(0.0, last + plan.early_s - time.monotonic()))
                burst.early = check(url, board, model, draw, burst, headers)
            time.sleep(max(0.0, last + plan.wait_s - time.monotonic()))
            burst.wrong = check(url, board, model, draw, burst, headers)
            bursts.append(burst)
            if report is not None:
                report(burst)
    return bursts


def check(
    url: str, board: str, model: Model, draw: random.Random, burst: Burst, headers: dict[str, str] | None
) -> list[str]:
    """Ask rank, around, ranks and top: every answer the model disagrees with."""
    wrong: list[str] = []
    ordered, rank_of = model.listing()
    base = f"{url}/boards/{board}"

    def get(path: str, **query: Any) -> Any:
        burst.answers += 1
        answer = requests.get(f"{base}{path}", params=query, headers=headers, timeout=TIMEOUT)
        answer.raise_for_status()
        return answer.json()

    for depth in DEPTHS:
        member = ordered[min(len(ordered) - 1, int(depth * (len(ordered) - 1)))]
        got = get(f"/members/{member}/rank")
        if got["rank"] != rank_of(member):
            wrong.append(f"rank of {member}: {got['rank']}, not {rank_of(member)}")
    middle = len(ordered) // 2
    got = get(f"/members/{ordered[middle]}/around", radius=5)
    window = ordered[max(0, middle - 5) : middle + 6]
    if [(e["memberId"], e["rank"]) for e in got["entries"]] != [(m, rank_of(m)) for m in window]:
        wrong.append(f"around {ordered[middle]}")
    asked = draw.sample(ordered, min(100, len(ordered)))
    burst.answers += 1
    answer = requests.post(f"{base}/ranks", json={"memberIds": asked}, headers=headers, timeout=TIMEOUT)
    answer.raise_for_status()
    off = [e["memberId"] for e in answer.json()["entries"] if e["rank"] != rank_of(e["memberId"])]
    if off or len(answer.json()["entries"]) != len(asked):
        wrong.append(f"ranks: {len(off)} of {len(asked)} off")
    got = get("/top", limit=100)
    if [(e["memberId"], e["rank"]) for e in got["entries"]] != [(m, rank_of(m)) for m in ordered[:100]]:
        wrong.append("top 100")
    return wrong


def main() -> None:
    from devstack.processes import LocalServer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=FreshPlan.members)
    parser.add_argument("--rate", type=float, default=FreshPlan.rate)
    parser.add_argument("--burst", type=float, default=FreshPlan.burst_s)
    parser.add_argument("--clients", type=int, default=FreshPlan.clients)
    parser.add_argument(
        "--early",
        type=float,
        default=FreshPlan.early_s,
        help="a first look this many seconds after a burst (default: none)",
    )
    args = parser.parse_args()
    plan = FreshPlan(
        members=args.members,
        rate=args.rate,
        burst_s=args.burst,
        clients=args.clients,
        early_s=args.early or None,
    )
    server = LocalServer.launch(
        lambda port: [sys.executable, "-m", "devstack", "--port", str(port), "--table-prefix", "fresh-"],
        what="the local stack",
        log_path=Path("bench-data") / "fresh" / "stack.log",
        env={**os.environ, "PODIUM_AUTH": "off"},
        timeout=120,
    )
    try:
        started = time.monotonic()
        bursts = run_bursts(server.endpoint, "fresh", plan, report=lambda b: print(_line(b), flush=True))
        took = time.monotonic() - started
    finally:
        server.stop()
    writes = sum(b.writes for b in bursts)
    summary = {
        "members": plan.members,
        "bursts": len(bursts),
        "writes": writes,
        "offeredRate": plan.rate,
        "takenRate": writes / sum(b.seconds for b in bursts),
        "answers": sum(b.answers for b in bursts),
        "answersNotExact": sum(len(b.wrong) for b in bursts),
        "burstsNotExact": sum(1 for b in bursts if b.wrong),
        "burstsNotExactAtFirstLook": sum(1 for b in bursts if b.early),
        "minutes": took / 60,
    }
    print(json.dumps(summary, indent=2))


def _line(burst: Burst) -> str:
    state = "exact" if not burst.wrong else "NOT EXACT: " + "; ".join(burst.wrong)
    if burst.early is not None:
        early = "exact" if not burst.early else f"{len(burst.early)} answers not yet exact"
        state = f"first look {early}, at 2 s {state}"
    taken = f"{burst.writes} writes in {burst.seconds:.1f} s ({burst.rate:.0f}/s)"
    return f"{burst.members:>7,} members: {taken}; {state}"


if __name__ == "__main__":
    main()
