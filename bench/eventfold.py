"""``make bench-events``: what the fold of the hot-counter event log costs per event, and
what a fresh read costs with many events waiting (docs/event-log.md).

    python -m bench.eventfold [--events 10000] [--members 4] [--clients 8] [--resent 0.1]
                              [--waiting 2000,10000] [--per-request 100]

It starts a DynamoDB Local of its own (in memory, ``bench.run.own_dynamodb``; its log in
``bench-data/eventfold/``) with the template's tables and their stream, creates an
``increment`` board with ``--members`` members, and logs ``--events`` events (value 1,
each with an ``eventId`` as the Python client sends them), ``--per-request`` a request,
from ``--clients`` threads, through the service's own write path
(``MemberService.log_events``); a ``--resent`` share of the requests is sent again (the
same ids: counted once). Then it reads the stream and hands the aggregator's records to
the fold (``Folder.fold``, what ``functions/aggregator`` runs per batch) in batches of the
template's ``BatchSize``, measuring every DynamoDB request the fold makes, and then hands
every batch over again (a redelivery: nothing may count twice). It prints, per event, the
requests (by operation), WCU and RCU of the ingest, of the fold and of the redelivery, and
each batch's seconds; and checks each member's score against the distinct events sent. RCU
are DynamoDB Local's consumed capacity at DynamoDB's minimums (``bench.measure``); WCU are
billed from the requests themselves (``Biller``: DynamoDB Local undercounts transactions).

Last, for each ``--waiting`` count, it logs that many events of one more member (nothing
folds them) and reads the member fresh (``MemberService.fresh_member``, what
``GET .../members/{m}?fresh=true`` runs): its requests, RCU, seconds, and the answer
(200 with the exact score and ``pendingEvents``, or 409).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import threading
import uuid
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from decimal import Decimal
from pathlib import Path
from typing import Any

from bench.loadrun import say
from bench.measure import Recorder, Sample, Window
from bench.run import local_client, own_dynamodb
from devstack import template
from devstack.stack import create_tables
from devstack.streamtail import StreamTail
from podium import cost
from podium.config import Settings
from podium.dal import Database, codecs, schema
from podium.errors import Conflict
from podium.events import LOG_PARTITIONS, pages_per_partition
from podium.stream.filters import wanted
from podium.validation import EventRequest, board_request, member_request
from podium.wiring import Services

BOARD = "event-fold"
LOG = Path(__file__).resolve().parent.parent / "bench-data" / "eventfold" / "dynamodb-local.log"
REQUEST_EVENTS = 100


class Biller:
    """The write units DynamoDB bills the requests of the clients it is attached to, from the
    requests themselves: DynamoDB Local's consumed capacity undercounts transactions (it
    reported some 0.5 WCU an action where DynamoDB bills 2 a KB). An item written costs 1 WCU
    a KB (rounded up), 2 in a transaction; a delete, update or condition check costs what the
    item weighs, known when this run wrote it (else 1 KB); a write of an item in
    ``LogIndex`` (keys only) costs 1 more, and a score item's write 2 more on the ranking
    index (its key moves: a delete and a put there), in a transaction or not. Cancelled
    transactions and failed conditions are not counted: few, and only where ids are reused."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sizes: dict[tuple[str, str], tuple[int, bool]] = {}  # key -> (units, in LogIndex)
        self.wcu = 0.0

    def attach(self, client: Any) -> Any:
        client.meta.events.register("provide-client-params.dynamodb.*", self._asked)
        client.meta.events.register("after-call.dynamodb.*", self._billed)
        return client

    @staticmethod
    def _asked(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        context["biller_params"] = params

    def _item(self, item: dict[str, Any]) -> tuple[float, float]:
        """What writing ``item`` bills: on the table, and on the indexes (never doubled)."""
        key = (item["pk"]["S"], item["sk"]["S"])
        units = max(1, math.ceil(codecs.item_bytes(item) / 1024))
        with self._lock:
            self._sizes[key] = (units, schema.LOG_INDEX_PK in item)
        return units, (1 if schema.LOG_INDEX_PK in item else 0) + (2 if "rpk" in item else 0)

    def _known(self, key: dict[str, Any]) -> tuple[float, float]:
        with self._lock:
            units, indexed = self._sizes.pop((key["pk"]["S"], key["sk"]["S"]), (1, False))
        return units, 1 if indexed else 0

    def _billed(self, model: Any, http_response: Any, context: dict[str, Any], **_: Any) -> None:
        params = context.get("biller_params")
        if params is None or getattr(http_response, "status_code", 200) >= 400:
            return
        total = 0.0
        if model.name == "PutItem":
            total = sum(self._item(params["Item"]))
        elif model.name in ("UpdateItem", "DeleteItem"):
            total = sum(self._known(params["Key"]))
        elif model.name == "BatchWriteItem":
            for requests in params["RequestItems"].values():
                for request in requests:
                    if "PutRequest" in request:
                        total += sum(self._item(request["PutRequest"]["Item"]))
                    else:
                        total += sum(self._known(request["DeleteRequest"]["Key"]))
        elif model.name == "TransactWriteItems":
            for action in params["TransactItems"]:
                kind, body = next(iter(action.items()))
                if kind == "Put":
                    table, index = self._item(body["Item"])
                elif kind == "ConditionCheck":
                    table, index = 1, 0
                else:
                    table, index = self._known(body["Key"])
                total += 2 * table + index
        with self._lock:
            self.wcu += total

    def take(self) -> float:
        with self._lock:
            billed, self.wcu = self.wcu, 0.0
        return billed


def aggregator() -> template.StreamConsumer:
    return next(c for c in template.read("").stream_consumers() if c.function == "AggregatorFunction")


def requests_of(members: list[str], events: int, seed: int, per_request: int) -> list[list[EventRequest]]:
    """``events`` events of value 1 spread over ``members`` at random, ``per_request`` a
    request, each with an id of its own."""
    draw = random.Random(seed)
    chosen = [draw.choice(members) for _ in range(events)]
    sent = [EventRequest(member, Decimal(1), f"e-{n}") for n, member in enumerate(chosen)]
    return [sent[i : i + per_request] for i in range(0, len(sent), per_request)]


def by_operation(window: Window) -> dict[str, int]:
    return dict(sorted(Counter(call.operation for call in window.calls).items()))


def per_event(sample: dict[str, float], events: int) -> dict[str, float]:
    return {name: round(value / events, 3) for name, value in sample.items()}


def fold_batches(
    service: Services, recorder: Recorder, biller: Biller, batches: list[list[dict[str, Any]]]
) -> dict[str, Any]:
    """Fold each batch as the aggregator would; what it cost, in all and batch by batch."""
    seconds: list[float] = []
    operations: Counter[str] = Counter()
    busy: dict[str, float] = {}
    totals = {"requests": 0.0, "wcu": 0.0, "rcu": 0.0}
    biller.take()
    failed = 0
    for batch in batches:
        with recorder.window() as window:
            failed += len(service.folder.fold(batch))
        sample = Sample.of(window)
        seconds.append(sample.seconds)
        operations.update(by_operation(window))
        for call in window.calls:
            busy[call.operation] = busy.get(call.operation, 0.0) + call.ended - call.started
        totals["requests"] += sample.requests
        totals["wcu"] += biller.take()
        totals["rcu"] += sample.rcu
    return {
        "batches": len(batches),
        "records": sum(len(b) for b in batches),
        "failed": failed,
        "seconds": round(sum(seconds), 2),
        "slowest_batch_seconds": round(max(seconds, default=0.0), 2),
        "operations": dict(sorted(operations.items())),
        "operation_seconds": {name: round(value, 2) for name, value in sorted(busy.items())},
        **{name: round(value, 1) for name, value in totals.items()},
    }


def fresh_read(service: Services, recorder: Recorder, member: str) -> dict[str, Any]:
    with recorder.window() as window:
        try:
            read, pending = service.members.fresh_member(BOARD, member)
            answer: dict[str, Any] = {"status": 200, "score": str(read.score), "pendingEvents": pending}
        except Conflict:
            answer = {"status": 409}
    sample = Sample.of(window)
    return {
        **answer,
        "requests": sample.requests,
        "operations": by_operation(window),
        "rcu": round(sample.rcu, 1),
        "bound": cost.READ_BOUND,
        "seconds": round(sample.seconds, 3),
    }


def measure(
    events: int, members: int, clients: int, resent: float, waiting: list[int], seed: int, per_request: int
) -> dict[str, Any]:
    with own_dynamodb(LOG) as server:
        client = local_client(server.endpoint)
        spec = template.read(f"evf{uuid.uuid4().hex[:6]}-")
        arns = create_tables(client, spec)
        settings = Settings(table_name=spec.table_names["LeaderboardTable"])
        writer = Services(Database.connect(settings, client=client))
        recorder, biller = Recorder(), Biller()
        metered_client = biller.attach(recorder.attach(local_client(server.endpoint)))
        metered = Services(Database.connect(settings, client=metered_client))
        tail = StreamTail(local_client(server.endpoint, "dynamodbstreams"), arns["LeaderboardTable"])

        writer.boards.put_board(BOARD, board_request({"operator": "increment", "shards": Decimal(4)}))
        names = [f"img-{n}" for n in range(members)]
        for name in names:
            writer.members.put_member(BOARD, name, member_request({}))
        tail.read()  # the board's and members' records are no part of the fold

        requests = requests_of(names, events, seed, per_request)
        again = random.Random(seed + 1).sample(requests, int(len(requests) * resent))
        say(f"logging {events:,} events for {members} members from {clients} clients")
        biller.take()
        with recorder.window() as window, ThreadPoolExecutor(max_workers=clients) as pool:
            list(pool.map(lambda r: metered.members.log_events(BOARD, r), requests + again))
        ingest = Sample.of(window)
        ingest_wcu = biller.take()
        logged = {
            "seconds": round(ingest.seconds, 2),
            "requests_sent_twice": len(again),
            "operations": by_operation(window),
            "per_event": per_event(
                {"requests": ingest.requests, "wcu": ingest_wcu, "rcu": ingest.rcu}, events
            ),
        }

        consumer = aggregator()
        records = [r for r in tail.read() if wanted(consumer.filters, r)]
        size = consumer.batch_size
        batches = [records[i : i + size] for i in range(0, len(records), size)]
        say(f"folding {len(records):,} records in {len(batches)} batches of up to {size}")
        first = fold_batches(metered, recorder, biller, batches)
        say(f"the same {len(batches)} batches again (a redelivery)")
        second = fold_batches(metered, recorder, biller, batches)

        expected = Counter(event.member_id for request in requests for event in request)
        scores = {name: writer.members.get_member(BOARD, name).score for name in names}
        exact = all(scores[name] == Decimal(expected[name]) for name in names)

        fresh = []
        for count in waiting:
            hot = f"hot-{count}"
            writer.members.put_member(BOARD, hot, member_request({"score": Decimal(5)}))
            say(f"logging {count:,} events of {hot}, unfolded, and reading it fresh")
            batch = [
                [
                    EventRequest(hot, Decimal(1), f"{hot}-{n}")
                    for n in range(i, min(i + REQUEST_EVENTS, count))
                ]
                for i in range(0, count, REQUEST_EVENTS)
            ]
            with ThreadPoolExecutor(max_workers=clients) as pool:
                list(pool.map(lambda r: writer.members.log_events(BOARD, r), batch))
            read = fresh_read(metered, recorder, hot)
            read["waiting"] = count
            read["exact"] = read.get("score") == str(5 + count) and read.get("pendingEvents") == count
            fresh.append(read)
        return {
            "events": events,
            "members": members,
            "clients": clients,
            "events_a_request": per_request,
            "ingest": logged,
            "fold": {**first, "per_event": per_event(_costs(first), events)},
            "redelivery": {**second, "per_event": per_event(_costs(second), events)},
            "scores_exact": exact,
            "fresh": fresh,
        }


def _costs(result: dict[str, Any]) -> dict[str, float]:
    return {"requests": result["requests"], "wcu": result["wcu"], "rcu": result["rcu"]}


def _costs_line(result: dict[str, Any]) -> str:
    each = result["per_event"]
    return f"{each['requests']} requests, {each['wcu']} WCU, {each['rcu']} RCU"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--members", type=int, default=4)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--resent", type=float, default=0.1, help="the share of requests sent twice")
    parser.add_argument("--waiting", default="2000,10000", help="events waiting for each fresh read")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-request", type=int, default=REQUEST_EVENTS, help="events a request (1 to 100)")
    args = parser.parse_args()
    waiting = [int(n) for n in args.waiting.split(",") if n]
    result = measure(
        args.events, args.members, args.clients, args.resent, waiting, args.seed, args.per_request
    )
    print(json.dumps(result, indent=2))
    ingest, fold, again = result["ingest"], result["fold"], result["redelivery"]
    print(f"\ningest: {result['events']:,} events in {ingest['seconds']} s; per event {_costs_line(ingest)}")
    print(
        f"fold: {fold['batches']} batches in {fold['seconds']} s (slowest batch "
        f"{fold['slowest_batch_seconds']} s); per event {_costs_line(fold)}"
    )
    print(
        f"redelivery: {again['seconds']} s; per event {_costs_line(again)}; "
        f"scores exact: {result['scores_exact']}"
    )
    for board_length, member_length in ((len(BOARD), len("hot-10000")), (20, 20), (200, 200)):
        most = pages_per_partition("b" * board_length, "m" * member_length, cost.READ_BOUND)
        print(
            f"a fresh read counts up to {most:,} pages in each of the {LOG_PARTITIONS} partitions "
            f"(ids of {board_length} and {member_length} characters): some {most * LOG_PARTITIONS:,} "
            "requests' events in all, if they spread evenly"
        )
    for read in result["fresh"]:
        print(
            f"fresh read, {read['waiting']:,} waiting: {read['status']}, {read['requests']} requests, "
            f"{read['rcu']} RCU (bound {read['bound']:.0f}), {read['seconds']} s, exact: {read['exact']}"
        )


if __name__ == "__main__":
    main()
