"""``make bench-quiet``: what one score change writes on a quiet board, every function
counted: the API's write, both stream consumers, as DynamoDB bills each request.

    python -m bench.quietwrites [--members 30,1000] [--changes 60] [--rate 2]

Quiet boards (a level, a region, a week, a league's cohort) are where a change cannot share
its count-tree writes with others: each stream batch holds one or two of its records. This
runs ``make run``'s stack (bench/grown.py's ``local_stack``: the API, the aggregator, the
notifier, with the template's batch settings) on a DynamoDB Local of its own, and for each
board size adds the members through the API, waits until the consumers are done, then
sets ``--changes`` random members to random new scores (far moves) at ``--rate`` a second
and waits again. Every DynamoDB request any function sends meanwhile is counted with its
consumed capacity (``ReturnConsumedCapacity``, as ``bench.measure`` asks for it, minimums
included), by the function that sent it (its threads' included) and by operation.

It prints the WCU (and RCU) per change, all functions together and each one's share, as
JSON.
"""

from __future__ import annotations

import argparse
import contextvars
import json
import random
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import requests

from bench.grown import admin_headers, local_stack, say
from bench.measure import billed_minimum
from bench.run import own_dynamodb
from devstack.functions import FunctionPool
from podium.dal import usage

DATA = Path("bench-data") / "quietwrites"
TIMEOUT = 60
SETTLED_S = 3.0  # no request for this long: the consumers are done

_function: contextvars.ContextVar[str] = contextvars.ContextVar("function", default="(none)")


class Counter:
    """Every DynamoDB request of the process's clients made after ``install``: count, WCU
    and RCU by (function, operation)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.totals: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        self.last = time.monotonic()

    def install(self) -> None:
        import boto3

        boto3.setup_default_session()
        session = boto3.DEFAULT_SESSION
        assert session is not None
        events = session.events
        events.register("provide-client-params.dynamodb.*", self._ask)
        events.register("after-call.dynamodb.*", self._count)
        invoke = FunctionPool.invoke

        def invoke_as(pool: FunctionPool, event: dict[str, Any]) -> Any:
            token = _function.set(pool.function)  # the function's threads see it too (fanout)
            try:
                return invoke(pool, event)
            finally:
                _function.reset(token)

        FunctionPool.invoke = invoke_as  # type: ignore[method-assign,assignment]

    @staticmethod
    def _ask(params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        if "ReturnConsumedCapacity" in model.input_shape.members:
            params["ReturnConsumedCapacity"] = "TOTAL"
        context["quiet_minimum"] = billed_minimum(model.name, params)

    def _count(self, model: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        units = max(usage.capacity_units(parsed.get("ConsumedCapacity")), context.get("quiet_minimum", 0.0))
        write = model.name in usage.WRITE_OPERATIONS
        with self.lock:
            total = self.totals[(_function.get(), model.name)]
            total[0] += 1
            total[1 if write else 2] += units
            self.last = time.monotonic()

    def reset(self) -> None:
        with self.lock:
            self.totals.clear()

    def settle(self) -> None:
        """Wait until no request has been sent for ``SETTLED_S``."""
        while time.monotonic() - self.last < SETTLED_S:
            time.sleep(0.5)

    def report(self, changes: int) -> dict[str, Any]:
        with self.lock:
            rows = {key: list(values) for key, values in self.totals.items()}
        shares: dict[str, dict[str, float]] = {}
        for (function, operation), (count, wcu, rcu) in rows.items():
            share = shares.setdefault(function, {"requests": 0.0, "wcu": 0.0, "rcu": 0.0})
            share["requests"] += count / changes
            share["wcu"] += wcu / changes
            share["rcu"] += rcu / changes
            share[f"{operation} wcu"] = share.get(f"{operation} wcu", 0.0) + wcu / changes
        return {
            "wcuPerChange": sum(wcu for _, wcu, _ in rows.values()) / changes,
            "rcuPerChange": sum(rcu for _, _, rcu in rows.values()) / changes,
            "requestsPerChange": sum(count for count, _, _ in rows.values()) / changes,
            "byFunction": {f: {k: round(v, 3) for k, v in share.items()} for f, share in shares.items()},
        }


def measure(sizes: list[int], changes: int, rate: float) -> list[dict[str, Any]]:
    counter = Counter()
    counter.install()
    draw = random.Random(5)
    with (
        own_dynamodb(DATA / "dynamodb-local.log") as dynamodb,
        local_stack(dynamodb.endpoint, "quiet-", DATA / "stack.log") as stack,
    ):
        session = requests.Session()
        session.headers.update(admin_headers(stack))
        return [
            quiet_board(f"{stack.url}/boards/quiet-{n}", n, changes, rate, session, counter, draw)
            for n in sizes
        ]


def quiet_board(
    url: str,
    members: int,
    changes: int,
    rate: float,
    session: requests.Session,
    counter: Counter,
    draw: random.Random,
) -> dict[str, Any]:
    """A board of ``members`` added through the API; then what ``changes`` far moves at
    ``rate`` a second write, counted once the consumers are done with them."""
    session.put(url, json={"operator": "set"}, timeout=TIMEOUT).raise_for_status()
    say(f"{url}: adding {members:,} members through the API ...")
    for index in range(members):
        body = {"score": draw.randrange(1_000_000)}
        session.put(f"{url}/members/m{index:06d}", json=body, timeout=TIMEOUT).raise_for_status()
    counter.settle()
    counter.reset()
    say(f"{url}: {changes} far moves at {rate:g} a second ...")
    started = time.monotonic()
    for change in range(changes):
        time.sleep(max(0.0, started + change / rate - time.monotonic()))
        body = {"value": draw.randrange(1_000_000)}
        member = f"m{draw.randrange(members):06d}"
        session.post(f"{url}/members/{member}/score", json=body, timeout=TIMEOUT).raise_for_status()
    counter.settle()
    result = {"members": members, "changes": changes, "rate": rate, **counter.report(changes)}
    say(f"{url}: {result['wcuPerChange']:.2f} WCU a change")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", default="30,1000", help="board sizes, comma-separated")
    parser.add_argument("--changes", type=int, default=60)
    parser.add_argument("--rate", type=float, default=2.0, help="changes a second")
    args = parser.parse_args()
    sizes = [int(size) for size in args.members.split(",")]
    print(json.dumps(measure(sizes, args.changes, args.rate), indent=2))


if __name__ == "__main__":
    main()
