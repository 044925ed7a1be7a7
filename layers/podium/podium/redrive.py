"""The redrive: stream records that failed every retry, replayed through their consumer.

Lambda sends a stream consumer's on-failure destination the details of the batch it gave
up on (``DDBStreamBatchInfo``: stream, shard, first and last sequence number), never the
records, and the stream keeps records 24 hours. ``Redrive.run`` takes each message off
the failure queue, reads its records back from the stream, hands them to the function
that failed them as Lambda would (the same event shape, its filter criteria applied), and
deletes the message only once the function took every record. A message it cannot
replay stays on the queue, and the run says why.

Exactly once: every consumer applies a record's effects once, keyed by its ``eventID``
(docs/streams.md, "Idempotency") or, for the count tree, by the score item's version, so
replaying records that were applied after all, or a message that a crashed redrive
replayed but did not delete, changes nothing. Unlike a retried batch, a replay may come
after newer records of its item: the event says it is one (``records.REPLAY``), and the
aggregator then checks each record against its member's score item as it is now.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from podium.dal.schema import board_of_pk
from podium.errors import RecordsGone
from podium.stream.filters import wanted
from podium.stream.records import REPLAY
from podium.values import frozen

if TYPE_CHECKING:
    from podium.dal.streams import QueuedMessage

# One invocation carries at most this many records and bytes: Lambda's synchronous
# payload limit is 6 MB, and a failed batch can hold up to the mapping's BatchSize.
CHUNK_RECORDS = 100
CHUNK_BYTES = 4 * 1024 * 1024

REPLAYED = "replayed"
WOULD_REPLAY = "would replay"
KEPT = "kept"  # the consumer failed again: fix the cause, then redrive again
GONE = "gone"  # the records are past the stream's retention
DISCARDED = "discarded"  # gone, and taken off the queue as asked
UNREADABLE = "unreadable"  # not an on-failure record of a DynamoDB stream


class FailureQueue(Protocol):
    def receive(self) -> list[QueuedMessage]: ...
    def delete(self, message: QueuedMessage) -> None: ...
    def release(self, message: QueuedMessage) -> None: ...


class StreamReader(Protocol):
    def between(self, stream_arn: str, shard_id: str, first: str, last: str) -> list[dict[str, Any]]: ...


class Consumers(Protocol):
    def filters(self, function_arn: str, stream_arn: str) -> list[Any]: ...

    def invoke(self, function_arn: str, event: dict[str, Any]) -> list[str]:
        """Invoke the function with ``event``; the sequence numbers it reported failed.
        Raises when the function raised."""
        ...


@frozen
class FailedBatch:
    """An on-failure record of a DynamoDB stream event source mapping."""

    function_arn: str
    stream_arn: str
    shard_id: str
    first: str
    last: str
    size: int
    condition: str
    timestamp: str

    @property
    def function(self) -> str:
        """The function's name: ``arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>]``."""
        parts = self.function_arn.split(":")
        return parts[6] if len(parts) > 6 else self.function_arn

    @classmethod
    def parse(cls, body: str) -> FailedBatch:
        """ValueError when ``body`` is not an on-failure record of a DynamoDB stream."""
        try:
            message = json.loads(body)
            info, context = message["DDBStreamBatchInfo"], message["requestContext"]
            return cls(
                function_arn=str(context["functionArn"]),
                stream_arn=str(info["streamArn"]),
                shard_id=str(info["shardId"]),
                first=str(info["startSequenceNumber"]),
                last=str(info["endSequenceNumber"]),
                size=int(info.get("batchSize", 0)),
                condition=str(context.get("condition", "")),
                timestamp=str(message.get("timestamp", "")),
            )
        except (ValueError, TypeError, KeyError) as error:
            raise ValueError(f"not an on-failure record of a DynamoDB stream: {error!r}") from error

    def __str__(self) -> str:
        return f"{self.function}: shard {self.shard_id}, sequence numbers {self.first} to {self.last}"


@frozen
class Outcome:
    message_id: str
    status: str
    detail: str
    batch: FailedBatch | None = None
    records: int = 0
    boards: tuple[str, ...] = ()

    def __str__(self) -> str:
        what = str(self.batch) if self.batch else f"message {self.message_id}"
        boards = f" (boards: {', '.join(self.boards)})" if self.boards else ""
        return f"{self.status:12} {what}: {self.detail}{boards}"


@dataclass
class RedriveReport:
    outcomes: list[Outcome] = field(default_factory=list)

    def count(self, status: str) -> int:
        return sum(1 for outcome in self.outcomes if outcome.status == status)

    @property
    def ok(self) -> bool:
        """Nothing left on the queue that this run was asked to take off it."""
        return all(outcome.status in (REPLAYED, WOULD_REPLAY, DISCARDED) for outcome in self.outcomes)

    def summary(self) -> str:
        if not self.outcomes:
            return "the failure queue is empty: nothing to redrive"
        counts = {s: self.count(s) for s in (REPLAYED, WOULD_REPLAY, KEPT, GONE, DISCARDED, UNREADABLE)}
        return ", ".join(f"{n} {status}" for status, n in counts.items() if n) + f" of {len(self.outcomes)}"


def _chunks(records: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
    chunk: list[dict[str, Any]] = []
    size = 0
    for record in records:
        record_size = len(json.dumps(record))
        if chunk and (len(chunk) >= CHUNK_RECORDS or size + record_size > CHUNK_BYTES):
            yield chunk
            chunk, size = [], 0
        chunk.append(record)
        size += record_size
    if chunk:
        yield chunk


def boards_of(records: list[dict[str, Any]]) -> tuple[str, ...]:
    """The boards whose items the records are about, in order of first appearance."""
    found: dict[str, None] = {}
    for record in records:
        pk = record.get("dynamodb", {}).get("Keys", {}).get("pk", {}).get("S")
        board = board_of_pk(pk) if isinstance(pk, str) else None
        if board is not None:
            found.setdefault(board)
    return tuple(found)


class Redrive:
    def __init__(self, queue: FailureQueue, stream: StreamReader, consumers: Consumers) -> None:
        self.queue = queue
        self.stream = stream
        self.consumers = consumers

    def run(self, *, dry_run: bool = False, discard_gone: bool = False) -> RedriveReport:
        """Replay every message on the queue once. A message replayed (or, with
        ``discard_gone``, whose records are gone) is deleted; every other one is made
        visible again at the end, for the next run and for the alarm. ``dry_run`` reads
        the records and replays nothing."""
        report = RedriveReport()
        kept: list[QueuedMessage] = []
        try:
            while messages := self.queue.receive():
                for message in messages:
                    outcome = self.replay(message, dry_run=dry_run)
                    if outcome.status == GONE and discard_gone and not dry_run:
                        outcome = Outcome(message.message_id, DISCARDED, outcome.detail, outcome.batch)
                    report.outcomes.append(outcome)
                    if outcome.status in (REPLAYED, DISCARDED):
                        self.queue.delete(message)
                    else:
                        kept.append(message)
        finally:
            for message in kept:
                self.queue.release(message)
        return report

    def replay(self, message: QueuedMessage, *, dry_run: bool = False) -> Outcome:
        try:
            batch = FailedBatch.parse(message.body)
        except ValueError as error:
            return Outcome(message.message_id, UNREADABLE, str(error))
        try:
            records = self.stream.between(batch.stream_arn, batch.shard_id, batch.first, batch.last)
            patterns = self.consumers.filters(batch.function_arn, batch.stream_arn)
        except RecordsGone as error:
            return Outcome(
                message.message_id,
                GONE,
                f"the records are no longer on the stream ({error}); what they changed is lost: "
                "check the boards written at the time with `make verify BOARD=... REPAIR=1`",
                batch,
            )
        except Exception as error:  # the stream or the function unreachable: try again later
            return Outcome(message.message_id, KEPT, f"could not read the records: {error!r}", batch)
        handed = [record for record in records if wanted(patterns, record)]
        boards = boards_of(handed)
        if dry_run:
            return Outcome(
                message.message_id, WOULD_REPLAY, f"{len(handed)} record(s)", batch, len(handed), boards
            )
        done = 0
        for chunk in _chunks(handed):
            try:
                failed = self.consumers.invoke(batch.function_arn, {"Records": chunk, REPLAY: True})
            except Exception as error:
                detail = f"the consumer failed: {type(error).__name__}: {error}"
                return Outcome(message.message_id, KEPT, detail, batch, done, boards)
            if failed:
                detail = f"the consumer failed the record(s) with sequence number(s) {', '.join(failed)}"
                return Outcome(message.message_id, KEPT, detail, batch, done, boards)
            done += len(chunk)
        return Outcome(message.message_id, REPLAYED, f"{done} record(s)", batch, done, boards)
