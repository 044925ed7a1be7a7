"""A local stand-in for Lambda's DynamoDB event source mapping.

It polls the table's stream shard by shard (parents before children) and hands each
consumer the batches Lambda would: the template's batch size, batching window and
filter criteria; with ``ReportBatchItemFailures`` it resumes from the first failed
record, with ``BisectBatchOnFunctionError`` it splits a batch whose invocation raised,
and after ``MaximumRetryAttempts`` it hands the failed records to the on-failure
destination: the template's SQS queue on the local SQS endpoint, or a JSON-lines file
for a consumer that has no destination. A destination that refuses a message is retried
until it takes it (the shard waits); the records are never dropped silently.

When the database stops answering (DynamoDB Local killed, then restarted on disk), the
shards wait for it, attempts that failed meanwhile do not count against the retry limit,
and once it answers every shard goes back a few seconds and reads on from there: the
consumers apply each record once, however often they get it.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import Any

from devstack.functions import FunctionPool, LambdaContext
from devstack.streamtail import StreamTail
from devstack.template import StreamConsumer
from podium.dal.streams import lambda_record
from podium.stream.filters import matches, wanted

__all__ = [
    "FailureDestination",
    "StreamPoller",
    "StreamTail",
    "failure_message",
    "lambda_record",
    "matches",
]

log = logging.getLogger("devstack.streams")

POLL_INTERVAL = 0.1
RETRY_DELAY = 0.05  # grows with each attempt, up to a second
DESTINATION_RETRY_DELAY = 0.2  # between sends the destination refused, growing up to 5 s
DATABASE_WAIT = 0.5  # between checks whether an unreachable database answers again
# After the database was unreachable, every shard goes back to where it was this long
# before: DynamoDB Local acknowledges a transaction a moment before it is on disk, so a
# kill can take back the last effects a consumer wrote (docs/operations.md, "After a crash").
REWIND_SECONDS = 5.0
CHECKPOINT_HISTORY = 60.0


@dataclass
class ShardState:
    shard_id: str
    iterator: str | None
    pending: list[dict[str, Any]] = field(default_factory=list)
    closed: bool = False
    last_sequence: str | None = None  # of the last record read: where a renewed iterator starts
    # (when, last_sequence) after each batch handed over, the last minute of them: where to
    # go back to after the database was unreachable (StreamPoller._recover)
    checkpoints: deque[tuple[float, str | None]] = field(default_factory=deque)

    def checkpoint(self, now: float) -> None:
        self.checkpoints.append((now, self.last_sequence))
        while len(self.checkpoints) > 1 and self.checkpoints[1][0] < now - CHECKPOINT_HISTORY:
            self.checkpoints.popleft()

    def before(self, moment: float) -> str | None:
        """The last sequence number handed over by ``moment`` (None: the start)."""
        found = None
        for when, sequence in self.checkpoints:
            if when > moment:
                break
            found = sequence
        return found


def unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the endpoint did not answer (refused, reset, timed out),
    rather than answering with an error."""
    from botocore.exceptions import ConnectionError as EndpointDown
    from botocore.exceptions import HTTPClientError

    return isinstance(error, EndpointDown | HTTPClientError)


def _arrival(record: dict[str, Any]) -> str | None:
    created = record["dynamodb"].get("ApproximateCreationDateTime")
    if not isinstance(created, int | float):
        return None
    return datetime.fromtimestamp(created, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def failure_message(
    consumer: str, stream_arn: str, shard_id: str, records: list[dict[str, Any]], attempts: int = 1
) -> dict[str, Any]:
    """What Lambda sends to a stream consumer's on-failure destination (its "invocation
    record", in the shape of the Lambda developer guide's example): the batch's details
    (``DDBStreamBatchInfo``), not the records; read them from the stream (the redrive)."""
    batch: dict[str, Any] = {
        "shardId": shard_id,
        "startSequenceNumber": records[0]["dynamodb"]["SequenceNumber"],
        "endSequenceNumber": records[-1]["dynamodb"]["SequenceNumber"],
        "approximateArrivalOfFirstRecord": _arrival(records[0]),
        "approximateArrivalOfLastRecord": _arrival(records[-1]),
        "batchSize": len(records),
        "streamArn": stream_arn,
    }
    return {
        "requestContext": {
            "requestId": str(uuid.uuid4()),
            "functionArn": LambdaContext(consumer).invoked_function_arn,
            "condition": "RetryAttemptsExhausted",
            "approximateInvokeCount": attempts,
        },
        "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
        "version": "1.0",
        "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "DDBStreamBatchInfo": {k: v for k, v in batch.items() if v is not None},
    }


class FailureDestination:
    """A stream consumer's on-failure destination: the SQS queue at ``queue_url`` (with
    ``sqs``, or a boto3 client for the environment's SQS endpoint), or, only when the
    consumer has no queue, the JSON-lines file ``fallback``. ``send`` raises when the
    queue does not take the message."""

    def __init__(self, queue_url: str | None, sqs: Any, fallback: Path) -> None:
        self.queue_url = queue_url
        if queue_url and sqs is None:
            import boto3

            sqs = boto3.client("sqs")
        self.sqs = sqs
        self.fallback = fallback

    def __str__(self) -> str:
        return self.queue_url or str(self.fallback)

    def send(
        self,
        consumer: str,
        stream_arn: str,
        shard_id: str,
        records: list[dict[str, Any]],
        attempts: int = 1,
    ) -> None:
        message = failure_message(consumer, stream_arn, shard_id, records, attempts)
        if self.queue_url:
            response = self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=json.dumps(message))
            if not response.get("MessageId"):
                raise RuntimeError(f"{self.queue_url} did not take the message: {response!r}")
        else:
            self.fallback.parent.mkdir(parents=True, exist_ok=True)
            with open(self.fallback, "a", encoding="utf-8") as handle:
                handle.write(json.dumps(message) + "\n")
        log.error(
            "%s: %d stream record(s) (sequence numbers %s to %s) failed every retry; sent to %s",
            consumer,
            len(records),
            message["DDBStreamBatchInfo"]["startSequenceNumber"],
            message["DDBStreamBatchInfo"]["endSequenceNumber"],
            self,
        )


class StreamPoller:
    def __init__(
        self,
        consumer: StreamConsumer,
        stream_arn: str,
        streams_client: Any,
        destination: FailureDestination,
        deliver_twice: bool = False,
    ) -> None:
        self.consumer = consumer
        # Lambda delivers at least once: a batch whose checkpoint was lost comes again.
        # With deliver_twice every batch does, which the tests use to prove idempotency.
        self.deliver_twice = deliver_twice
        self.stream_arn = stream_arn
        self.client = streams_client
        self.destination = destination
        self.pool = FunctionPool(consumer.function, consumer.code_dir, consumer.handler)
        self.shards: dict[str, ShardState] = {}
        self.finished: set[str] = set()
        self._stop = threading.Event()
        self._paused = threading.Event()
        self._between = threading.Event()  # set while no batch is in hand
        self._between.set()
        self._thread = threading.Thread(target=self._run, name=f"stream-{consumer.function}", daemon=True)
        self._watcher = threading.Thread(
            target=self._watch, name=f"stream-{consumer.function}-watch", daemon=True
        )
        self.delivered = 0
        self.retry_delay = RETRY_DELAY
        self.destination_retry_delay = DESTINATION_RETRY_DELAY
        self._outage_began: float | None = None  # when the database was first found unreachable

    def start(self) -> None:
        self._discover()  # position the iterators now, so LATEST means "from start-up"
        self._thread.start()
        self._watcher.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        if self._watcher.is_alive():
            self._watcher.join(timeout=10)

    def _watch(self) -> None:
        """Notice the database going away even while a delivery is in hand: a consumer's own
        DynamoDB client can ride out a short restart on its retries, and the effects it
        wrote just before the kill would then never be written again (``_recover``)."""
        while not self._stop.wait(DATABASE_WAIT):
            try:
                self._probe.describe_stream(StreamArn=self.stream_arn, Limit=1)
            except Exception as error:
                if unreachable(error) and self._outage_began is None:
                    self._outage_began = time.monotonic()
                    log.warning("%s: the database is unreachable (%s)", self.consumer.function, error)

    @cached_property
    def _probe(self) -> Any:
        """The streams client, without retries and with short timeouts: whether the
        database answers, at once (the poller's own client retries for seconds)."""
        meta = getattr(self.client, "meta", None)
        if meta is None:
            return self.client  # a stand-in's (tests)
        import boto3
        from botocore.config import Config

        config = Config(retries={"total_max_attempts": 1}, connect_timeout=1, read_timeout=5)
        return boto3.client(
            "dynamodbstreams", endpoint_url=meta.endpoint_url, region_name=meta.region_name, config=config
        )

    def pause(self, paused: bool, wait: float = 60.0) -> None:
        """Stop reading the stream, or go on where it stopped. A pause returns once the
        batch in hand (if any) is delivered: records read but not yet handed over wait."""
        if paused:
            self._paused.set()
            self._between.wait(wait)
        else:
            self._paused.clear()

    def _discover(self) -> None:
        description = self.client.describe_stream(StreamArn=self.stream_arn)["StreamDescription"]
        for shard in description.get("Shards", []):
            shard_id = shard["ShardId"]
            if shard_id in self.shards or shard_id in self.finished:
                continue
            parent = shard.get("ParentShardId")
            if parent and parent in self.shards and not self.shards[parent].closed:
                continue  # a child waits until its parent is drained, as Lambda does
            iterator = self.client.get_shard_iterator(
                StreamArn=self.stream_arn,
                ShardId=shard_id,
                ShardIteratorType=self.consumer.starting_position,
            )["ShardIterator"]
            self.shards[shard_id] = ShardState(shard_id, iterator)
            self.shards[shard_id].checkpoint(time.monotonic())

    def _run(self) -> None:
        last_discovery = 0.0
        while not self._stop.is_set():
            if self._paused.is_set():
                self._stop.wait(POLL_INTERVAL)
                continue
            try:
                if self._outage_began is not None:
                    self._recover()
                if time.monotonic() - last_discovery > 1.0:
                    self._discover()
                    last_discovery = time.monotonic()
                busy = False
                for state in list(self.shards.values()):
                    busy = self._poll_shard(state) or busy
                if not busy:
                    self._stop.wait(POLL_INTERVAL)
            except Exception as error:  # keep polling, as the managed poller does
                if unreachable(error):  # DynamoDB Local restarting: its iterators stay valid
                    if self._outage_began is None:
                        self._outage_began = time.monotonic()
                        log.warning("%s: the stream is unreachable (%s)", self.consumer.function, error)
                else:
                    log.exception("%s: stream polling failed; retrying", self.consumer.function)
                self._stop.wait(1.0)

    def _recover(self) -> None:
        """Once the database answers again after it was unreachable, go back on every shard
        to where it was ``REWIND_SECONDS`` before, and read on from there: the consumers
        apply a record once however often they get it, so what was applied is skipped and
        what a crash took back is applied again."""
        self._probe.describe_stream(StreamArn=self.stream_arn, Limit=1)  # raises while it is down
        assert self._outage_began is not None
        moment = self._outage_began - REWIND_SECONDS
        for state in self.shards.values():
            state.last_sequence = state.before(moment)
            state.pending = []
            state.iterator = self._renew_iterator(state)
            log.warning(
                "%s: the database answers again; shard %s reads on after sequence number %s",
                self.consumer.function,
                state.shard_id,
                state.last_sequence or f"nothing ({self.consumer.starting_position})",
            )
        self._outage_began = None

    def _renew_iterator(self, state: ShardState) -> str:
        """A new iterator where reading stopped: after the last record read, or at the
        starting position. An iterator expires after 15 minutes, and DynamoDB Local may
        refuse one taken while its shard was empty (TrimmedDataAccessException) once
        records arrive; retrying that iterator would fail forever."""
        request: dict[str, Any] = {"StreamArn": self.stream_arn, "ShardId": state.shard_id}
        if state.last_sequence is not None:
            request.update(ShardIteratorType="AFTER_SEQUENCE_NUMBER", SequenceNumber=state.last_sequence)
        else:
            request["ShardIteratorType"] = self.consumer.starting_position
        return str(self.client.get_shard_iterator(**request)["ShardIterator"])

    def _poll_shard(self, state: ShardState) -> bool:
        deadline = time.monotonic() + self.consumer.batching_window
        renewed = False
        while state.iterator and len(state.pending) < self.consumer.batch_size and not self._paused.is_set():
            try:
                response = self.client.get_records(
                    ShardIterator=state.iterator, Limit=self.consumer.batch_size - len(state.pending)
                )
            except Exception as error:
                code = getattr(error, "response", {}).get("Error", {}).get("Code")
                if renewed or code not in ("TrimmedDataAccessException", "ExpiredIteratorException"):
                    raise
                log.warning(
                    "%s: %s on shard %s; renewing its iterator", self.consumer.function, code, state.shard_id
                )
                state.iterator = self._renew_iterator(state)
                renewed = True
                continue
            state.iterator = response.get("NextShardIterator")
            fresh = [lambda_record(r, self.stream_arn) for r in response.get("Records", [])]
            if fresh:
                state.last_sequence = fresh[-1]["dynamodb"]["SequenceNumber"]
            state.pending.extend(fresh)
            if not fresh and (not state.pending or time.monotonic() >= deadline):
                break
            if not fresh:
                self._stop.wait(min(0.05, max(0.0, deadline - time.monotonic())))
        if state.iterator is None and not state.pending:
            state.closed = True
            self.finished.add(state.shard_id)
            del self.shards[state.shard_id]
            return False
        if not state.pending:
            return False
        self._between.clear()
        try:
            if self._paused.is_set():  # paused while gathering: the records wait for the go-on
                return False
            batch, state.pending = state.pending, []
            handed = [r for r in batch if wanted(self.consumer.filters, r)]
            if handed:
                self._deliver(state.shard_id, handed)
                if self.deliver_twice:
                    self._deliver(state.shard_id, handed)
            state.checkpoint(time.monotonic())
            return True
        finally:
            self._between.set()

    def _deliver(self, shard_id: str, records: list[dict[str, Any]]) -> None:
        """Invoke until the batch is done, as the event source mapping would."""
        queue = [records]
        attempts: dict[str, int] = {}
        while queue and not self._stop.is_set():
            batch = queue.pop(0)
            first = batch[0]["eventID"]
            try:
                result = self.pool.invoke({"Records": batch})
            except Exception:
                log.exception("%s: invocation failed", self.consumer.function)
                if self.consumer.bisect and len(batch) > 1:
                    middle = len(batch) // 2
                    queue[:0] = [batch[:middle], batch[middle:]]
                    continue
                failed_from = 0
            else:
                failures = (result or {}).get("batchItemFailures") or []
                if not failures:
                    self.delivered += len(batch)
                    continue
                failed_ids = {f["itemIdentifier"] for f in failures}
                failed_from = next(
                    (i for i, r in enumerate(batch) if r["dynamodb"]["SequenceNumber"] in failed_ids), 0
                )
                self.delivered += failed_from
            rest = batch[failed_from:]
            if self._waited_for_database():
                queue.insert(0, rest)  # the attempt does not count: see _waited_for_database
                continue
            key = rest[0]["eventID"] if rest else first
            attempts[key] = attempts.get(key, 0) + 1
            limit = self.consumer.max_retries
            if limit >= 0 and attempts[key] > limit:
                # Lambda gives up on the failing record(s); the records after them go on.
                self._give_up(shard_id, rest[:1], attempts[key])
                if len(rest) > 1:
                    queue.insert(0, rest[1:])
                continue
            time.sleep(min(1.0, self.retry_delay * attempts[key]))
            queue.insert(0, rest)

    def _waited_for_database(self) -> bool:
        """Whether the database was unreachable after an attempt failed; if so, wait until
        it answers again. Such an attempt does not count against the retry limit: in AWS a
        consumer's retries are for its own errors and the table never goes away, while
        DynamoDB Local can be killed and restarted (its -dbPath keeps the stream), and the
        records it failed meanwhile would go to the failure queue for nothing."""
        waited = False
        while not self._stop.is_set():
            try:
                self._probe.describe_stream(StreamArn=self.stream_arn, Limit=1)
                return waited
            except Exception as error:
                if not unreachable(error):
                    return waited
                if not waited:
                    log.warning(
                        "%s: the database is unreachable (%s); the shard waits for it",
                        self.consumer.function,
                        error,
                    )
                if self._outage_began is None:
                    self._outage_began = time.monotonic()
                waited = True
            self._stop.wait(DATABASE_WAIT)
        return waited

    def _give_up(self, shard_id: str, records: list[dict[str, Any]], attempts: int) -> None:
        """Hand records to the on-failure destination, retrying until it takes them: the
        shard waits meanwhile, because going on would lose them."""
        failures = 0
        while True:
            try:
                self.destination.send(self.consumer.function, self.stream_arn, shard_id, records, attempts)
                return
            except Exception:
                failures += 1
                log.exception(
                    "%s: the on-failure destination %s refused %d record(s) from sequence number %s; "
                    "the shard waits until it takes them (attempt %d)",
                    self.consumer.function,
                    self.destination,
                    len(records),
                    records[0]["dynamodb"]["SequenceNumber"],
                    failures,
                )
                if self._stop.wait(min(5.0, self.destination_retry_delay * failures)):
                    log.error(
                        "%s: stopping; %d failed record(s) from sequence number %s never reached %s",
                        self.consumer.function,
                        len(records),
                        records[0]["dynamodb"]["SequenceNumber"],
                        self.destination,
                    )
                    raise
