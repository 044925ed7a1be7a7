"""Read what every DynamoDB request costs, from DynamoDB's own answer.

A botocore event hook asks every request for ``ReturnConsumedCapacity=INDEXES`` and
records, when the answer comes, its start and end time, the capacity it consumed (on
the table and on each index) and the items it read. A :class:`Window` collects the
requests of one measured operation, including those its thread pool sends.
"""

from __future__ import annotations

import math
import statistics
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from devstack import template
from podium.config import Settings
from podium.dal import usage


@dataclass(frozen=True)
class Call:
    """One DynamoDB request as the client saw it."""

    operation: str
    started: float
    ended: float
    capacity: float  # table and indexes together, as DynamoDB Local reported it
    index_capacity: float  # the part consumed on global secondary indexes
    items_read: int  # ScannedCount of a query, the items a get returned
    count: int  # Count of a query (what matched); the items returned otherwise
    error: str | None = None

    minimum: float = 0.0  # the least DynamoDB bills this request (see ``billed_minimum``)
    missing: float = 0.0  # what the keys of a BatchGetItem that found nothing are billed

    @property
    def is_read(self) -> bool:
        return self.operation in usage.READ_OPERATIONS

    @property
    def billed(self) -> float:
        return max(self.capacity, self.minimum) + self.missing


def billed_minimum(operation: str, params: dict[str, Any]) -> float:
    """What DynamoDB bills a read that finds nothing: a read request unit rounds up, so a
    GetItem or a Query costs at least 0.5 RCU eventually consistent, 1 consistent (a query
    on a global secondary index is always eventually consistent). DynamoDB Local reports 0
    for a query that matches nothing; the measurements count the minimum instead."""
    if operation not in ("GetItem", "Query", "Scan"):
        return 0.0
    return 1.0 if params.get("ConsistentRead") else 0.5


def batch_keys(params: dict[str, Any]) -> float:
    """What the keys a BatchGetItem asks for are billed at the least, each as a GetItem (0.5
    RCU, 1 consistent): DynamoDB Local reports 0 for a key that finds nothing, DynamoDB bills
    it the minimum, so ``missing`` adds that for each key asked and not returned."""
    return sum(
        len(request.get("Keys", [])) * (1.0 if request.get("ConsistentRead") else 0.5)
        for request in (params.get("RequestItems") or {}).values()
    )


def top_budget(k: float, shards: float) -> float:
    """The items an exact top-k may read: the brief's 1.5·k + 2·shards."""
    return 1.5 * k + 2 * shards


def rounds(calls: list[Call]) -> int:
    """Sequential round trips: requests that overlap in time share a round; a request
    that starts after every earlier one has ended starts a new one."""
    count = 0
    horizon = -math.inf
    for call in sorted(calls, key=lambda c: c.started):
        if call.started >= horizon:
            count += 1
        horizon = max(horizon, call.ended)
    return count


def _capacity(consumed: Any) -> tuple[float, float]:
    """The request's units (``usage.capacity_units``, as the service's own metrics count
    them), and the part of them spent on indexes (``ReturnConsumedCapacity=INDEXES``)."""
    entries = consumed if isinstance(consumed, list) else [consumed] if consumed else []
    on_indexes = sum(
        float(index.get("CapacityUnits", 0.0))
        for entry in entries
        for index in (entry.get("GlobalSecondaryIndexes") or {}).values()
    )
    return usage.capacity_units(consumed), on_indexes


def _items(operation: str, parsed: dict[str, Any]) -> tuple[int, int]:
    """The items the request went through (``usage.items_read``) and those it returned."""
    read = usage.items_read(operation, parsed)
    return read, int(parsed.get("Count", 0)) if operation in ("Query", "Scan") else read


class Recorder:
    """Records every request of the clients it is attached to."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Call] = []

    def attach(self, client: Any) -> Any:
        events = client.meta.events
        events.register("provide-client-params.dynamodb.*", self._ask_for_capacity)
        events.register("before-call.dynamodb.*", self._started)
        events.register("after-call.dynamodb.*", self._ended)
        return client

    @staticmethod
    def _ask_for_capacity(params: dict[str, Any], model: Any, context: dict[str, Any], **_: Any) -> None:
        if "ReturnConsumedCapacity" in model.input_shape.members:
            params["ReturnConsumedCapacity"] = "INDEXES"
        context["bench_minimum"] = billed_minimum(model.name, params)
        if model.name == "BatchGetItem":
            keys = sum(len(r.get("Keys", [])) for r in (params.get("RequestItems") or {}).values())
            context["bench_batch"] = (keys, batch_keys(params))

    @staticmethod
    def _started(context: dict[str, Any], **_: Any) -> None:
        context["bench_started"] = time.perf_counter()

    def _ended(self, model: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        ended = time.perf_counter()
        capacity, on_indexes = _capacity(parsed.get("ConsumedCapacity"))
        items_read, count = _items(model.name, parsed)
        error = (parsed.get("Error") or {}).get("Code")
        missing = 0.0
        if model.name == "BatchGetItem" and "bench_batch" in context:
            asked, least = context["bench_batch"]
            unprocessed = sum(len(r.get("Keys", [])) for r in (parsed.get("UnprocessedKeys") or {}).values())
            absent = max(0, asked - unprocessed - items_read)
            missing = least / asked * absent if asked else 0.0
        call = Call(
            operation=model.name,
            started=float(context.get("bench_started", ended)),
            ended=ended,
            capacity=capacity,
            index_capacity=on_indexes,
            items_read=items_read,
            count=count,
            error=error,
            minimum=float(context.get("bench_minimum", 0.0)),
            missing=missing,
        )
        with self._lock:
            self._calls.append(call)

    @contextmanager
    def window(self) -> Iterator[Window]:
        """The requests sent while the block runs (the block waits for its own)."""
        window = Window()
        with self._lock:
            self._calls = []  # windows never overlap: what came before belongs to none
        window.started = time.perf_counter()
        try:
            yield window
        finally:
            window.ended = time.perf_counter()
            with self._lock:
                window.calls, self._calls = self._calls, []


class KeyReads:
    """Counts what the clients it is attached to ask DynamoDB to read, item by item: each
    key of a GetItem or BatchGetItem (its ``(pk, sk)``), and each Query (by its index, or
    ``table``). What a cache in front of DynamoDB saves shows here."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.items: Counter[tuple[str, str]] = Counter()
        self.queries: Counter[str] = Counter()

    def attach(self, client: Any) -> Any:
        client.meta.events.register("provide-client-params.dynamodb.*", self._asked)
        return client

    def _asked(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        if model.name == "GetItem":
            keys = [params["Key"]]
        elif model.name == "BatchGetItem":
            keys = [key for request in params["RequestItems"].values() for key in request["Keys"]]
        elif model.name == "Query":
            with self._lock:
                self.queries[params.get("IndexName", "table")] += 1
            return
        else:
            return
        with self._lock:
            self.items.update((key["pk"]["S"], key["sk"]["S"]) for key in keys)

    def of(self, pk: str, sk: str | None = None) -> int:
        """Reads of the item ``(pk, sk)``, or of every item of partition ``pk``."""
        with self._lock:
            if sk is not None:
                return self.items[(pk, sk)]
            return sum(n for (p, _), n in self.items.items() if p == pk)

    def starting(self, prefix: str) -> int:
        """Reads of the items whose partition key starts with ``prefix``."""
        with self._lock:
            return sum(n for (p, _), n in self.items.items() if p.startswith(prefix))

    def clear(self) -> None:
        with self._lock:
            self.items.clear()
            self.queries.clear()


class Window:
    calls: list[Call] = field(default_factory=list)
    started: float = 0.0
    ended: float = 0.0

    @property
    def seconds(self) -> float:
        return self.ended - self.started


@dataclass(frozen=True)
class Sample:
    """One run of a measured operation."""

    seconds: float
    requests: int
    rounds: int
    rcu: float
    wcu: float
    index_units: float
    items_read: int
    count: int

    @classmethod
    def of(cls, window: Window) -> Sample:
        calls = window.calls
        return cls(
            seconds=window.seconds,
            requests=len(calls),
            rounds=rounds(calls),
            rcu=sum(c.billed for c in calls if c.is_read),
            wcu=sum(c.capacity for c in calls if not c.is_read),
            index_units=sum(c.index_capacity for c in calls),
            items_read=sum(c.items_read for c in calls),
            count=sum(c.count for c in calls),
        )


def percentile(values: list[float], fraction: float) -> float:
    """The nearest-rank percentile (p95 of 20 values is the 19th)."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def summarise(samples: list[Sample]) -> dict[str, Any]:
    """Medians of the costs (they barely vary), p50/p95 of the latency."""
    latencies = [s.seconds * 1000 for s in samples]

    def median(name: str) -> float:
        return float(statistics.median(getattr(s, name) for s in samples))

    return {
        "runs": len(samples),
        "requests": median("requests"),
        "rounds": median("rounds"),
        "rcu": median("rcu"),
        "wcu": median("wcu"),
        "indexUnits": median("index_units"),
        "itemsRead": median("items_read"),
        "count": median("count"),
        "p50Ms": percentile(latencies, 0.50),
        "p95Ms": percentile(latencies, 0.95),
    }


def create_tables(client: Any, prefix: str) -> Settings:
    """The template's tables, without their stream: nothing consumes it here, and
    DynamoDB Local would keep every loaded item in it."""
    spec = template.read(prefix)
    for request in spec.tables().values():
        request.pop("StreamSpecification", None)
        client.create_table(**request)
    for name in spec.table_names.values():
        client.get_waiter("table_exists").wait(TableName=name)
    return spec.settings()


@contextmanager
def dynamodb_endpoint() -> Iterator[str]:
    """The DynamoDB a bench measures: ``AWS_ENDPOINT_URL_DYNAMODB`` when set, else a
    DynamoDB Local of its own on a free port, stopped afterwards."""
    import os

    from devstack.dynamodb_local import DynamoDBLocal

    endpoint = os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")
    if endpoint:
        yield endpoint
        return
    server = DynamoDBLocal.start()
    try:
        yield server.endpoint
    finally:
        server.stop()


@contextmanager
def metered_database(prefix: str) -> Iterator[tuple[Any, Recorder]]:
    """A ``podium.dal.Database`` on fresh tables named ``{prefix}...`` of the DynamoDB a
    bench measures (``dynamodb_endpoint``), and the ``Recorder`` that sees its every request."""
    import boto3
    from botocore.config import Config

    from podium.dal import Database

    with dynamodb_endpoint() as endpoint:
        client = boto3.client(
            "dynamodb",
            endpoint_url=endpoint,
            region_name="us-east-1",
            config=Config(max_pool_connections=128),
        )
        recorder = Recorder()
        recorder.attach(client)
        yield Database.connect(create_tables(client, prefix), client=client), recorder
