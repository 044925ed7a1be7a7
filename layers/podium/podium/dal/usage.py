"""What the DynamoDB requests of one unit of work consumed, as DynamoDB itself reports it:
read and write capacity units and the items read, summed over every request made while
``measuring()`` is open, including those its fan-out threads send (``podium.fanout``
carries the measurement over to them).

A botocore hook on the service's client asks each request for
``ReturnConsumedCapacity=TOTAL`` while a measurement is open (the answer is a few bytes
more; DynamoDB bills nothing for it) and adds up the answer. Outside a measurement the
requests are left as they are. The units are DynamoDB's own: on AWS they are what is
billed; DynamoDB Local reports 0 for a read that finds nothing, which AWS bills at the
minimum (0.5 RCU), so the local figures can be lower than the bill.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

READ_OPERATIONS = frozenset({"GetItem", "BatchGetItem", "Query", "Scan", "TransactGetItems"})
# The writes; a transaction's condition checks are billed within its write units.
WRITE_OPERATIONS = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})


@dataclass
class Usage:
    """Capacity units and items read so far by the requests of one measurement."""

    read_units: float = 0.0
    write_units: float = 0.0
    items_read: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, operation: str, units: float, items_read: int) -> None:
        with self._lock:  # fan-out threads of one request add at once
            self.items_read += items_read
            if operation in READ_OPERATIONS:
                self.read_units += units
            elif operation in WRITE_OPERATIONS:
                self.write_units += units


_current: ContextVar[Usage | None] = ContextVar("podium_dynamodb_usage", default=None)


@contextmanager
def measuring() -> Iterator[Usage]:
    """Sum what the DynamoDB requests made inside the block (and the threads it fans out
    to) consume; measurements nest, the inner one counting for itself alone."""
    usage = Usage()
    token = _current.set(usage)
    try:
        yield usage
    finally:
        _current.reset(token)


def capacity_units(consumed: Any) -> float:
    """The total of a ``ConsumedCapacity`` answer: one entry, or one per table (batches
    and transactions)."""
    entries = consumed if isinstance(consumed, list) else [consumed] if consumed else []
    return sum(float(entry.get("CapacityUnits", 0.0)) for entry in entries)


def items_read(operation: str, parsed: dict[str, Any]) -> int:
    """The items a read went through: a query's or scan's ``ScannedCount`` (what it is
    billed for, before any filter), the items a get or a batch returned."""
    if operation in ("Query", "Scan"):
        return int(parsed.get("ScannedCount", 0))
    if operation == "GetItem":
        return 1 if parsed.get("Item") else 0
    if operation == "BatchGetItem":
        return sum(len(items) for items in (parsed.get("Responses") or {}).values())
    if operation == "TransactGetItems":
        return sum(1 for response in parsed.get("Responses") or [] if response.get("Item"))
    return 0


def _ask_for_capacity(params: dict[str, Any], model: Any, **_: Any) -> None:
    if _current.get() is not None and "ReturnConsumedCapacity" in model.input_shape.members:
        params.setdefault("ReturnConsumedCapacity", "TOTAL")


def _count(model: Any, parsed: dict[str, Any], **_: Any) -> None:
    usage = _current.get()
    if usage is not None:
        usage.add(model.name, capacity_units(parsed.get("ConsumedCapacity")), items_read(model.name, parsed))


def attach(client: Any) -> None:
    """Count the requests of ``client`` into the open measurement (once per client)."""
    events = client.meta.events
    events.register("provide-client-params.dynamodb.*", _ask_for_capacity, unique_id="podium-usage-ask")
    events.register("after-call.dynamodb.*", _count, unique_id="podium-usage-count")
