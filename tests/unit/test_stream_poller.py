"""The local event source mapping: filters, partial failures, bisection, retry limit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devstack.streams import FailureDestination, ShardState, StreamPoller, matches
from devstack.template import read


def _record(sequence: int, sk: str = "MEMBER", event: str = "INSERT") -> dict[str, Any]:
    return {
        "eventID": f"e{sequence}",
        "eventName": event,
        "dynamodb": {"Keys": {"pk": {"S": "M#b#m"}, "sk": {"S": sk}}, "SequenceNumber": f"{sequence:05d}"},
    }


class FakePool:
    """Stands in for the function: fails the records whose numbers are in ``poison``."""

    def __init__(self, poison: set[int], raise_instead: bool = False) -> None:
        self.poison = poison
        self.raise_instead = raise_instead
        self.batches: list[list[str]] = []
        self.done: list[str] = []

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        records = event["Records"]
        self.batches.append([r["eventID"] for r in records])
        failures = []
        for record in records:
            if int(record["eventID"][1:]) in self.poison:
                if self.raise_instead:
                    raise RuntimeError("poison record")
                failures.append({"itemIdentifier": record["dynamodb"]["SequenceNumber"]})
                break
            self.done.append(record["eventID"])
        return {"batchItemFailures": failures}


def _poller(tmp_path: Path, pool: FakePool) -> tuple[StreamPoller, Path]:
    consumer = next(c for c in read().stream_consumers() if c.function == "AggregatorFunction")
    failures = tmp_path / "failures.jsonl"
    poller = StreamPoller(
        consumer, "arn:stream", streams_client=None, destination=FailureDestination(None, None, failures)
    )
    poller.pool = pool  # type: ignore[assignment]
    poller.retry_delay = 0
    return poller, failures


def test_the_template_filters_pass_what_each_consumer_needs() -> None:
    consumers = {c.function: c for c in read().stream_consumers()}

    def passes(function: str, record: dict[str, Any]) -> bool:
        return any(matches(p, record) for p in consumers[function].filters)

    # The aggregator: member births and deaths, and score writes (for rollups)
    assert passes("AggregatorFunction", _record(1))
    assert passes("AggregatorFunction", _record(1, event="REMOVE"))
    assert not passes("AggregatorFunction", _record(1, event="MODIFY"))
    assert passes("AggregatorFunction", _record(1, sk="SCORE#all", event="MODIFY"))
    assert passes("AggregatorFunction", _record(1, sk="SCORE#2026-W47", event="REMOVE"))  # period counts
    assert not passes("AggregatorFunction", _record(1, sk="RIVALS"))
    # The notifier: every score change, removals included (a deleted leader)
    assert passes("NotifierFunction", _record(1, sk="SCORE#all", event="REMOVE"))
    assert not passes("NotifierFunction", _record(1))
    # and its own fan-outs (a popular member's followers told in chunks) while they are
    # pending; the aggregator none of them
    for event, pending in (("INSERT", True), ("MODIFY", True), ("MODIFY", False), ("REMOVE", None)):
        job: dict[str, Any] = {
            "eventID": "e2",
            "eventName": event,
            "dynamodb": {"Keys": {"pk": {"S": "J#b#star"}, "sk": {"S": "e1"}}, "SequenceNumber": "00002"},
        }
        if pending is not None:
            job["dynamodb"]["NewImage"] = {"pending": {"BOOL": pending}, "n": {"N": "1"}}
        assert passes("NotifierFunction", job) == bool(pending), (event, pending)
        assert not passes("AggregatorFunction", job)


def test_a_reported_failure_resumes_from_that_record(tmp_path: Path) -> None:
    # Given a batch whose third record fails once and then succeeds
    pool = FakePool(poison={3})
    poller, _ = _poller(tmp_path, pool)
    original = pool.invoke

    def heal_after_first_failure(event: dict[str, Any]) -> dict[str, Any]:
        result = original(event)
        pool.poison.clear()
        return result

    pool.invoke = heal_after_first_failure  # type: ignore[method-assign]

    # When the batch is delivered
    poller._deliver("shard-1", [_record(i) for i in range(1, 6)])

    # Then the retry starts at the failed record, and each record is done exactly once
    assert pool.batches == [["e1", "e2", "e3", "e4", "e5"], ["e3", "e4", "e5"]]
    assert pool.done == ["e1", "e2", "e3", "e4", "e5"]


def test_a_poison_record_goes_to_the_destination_and_the_rest_go_on(tmp_path: Path) -> None:
    # Given a record that always fails
    pool = FakePool(poison={2})
    poller, failures = _poller(tmp_path, pool)

    # When the batch is delivered
    poller._deliver("shard-1", [_record(i) for i in range(1, 5)])

    # Then after the template's retry limit it lands in the on-failure destination once,
    # and the records after it are processed
    assert pool.done == ["e1", "e3", "e4"]
    assert failures.read_text().count('"startSequenceNumber": "00002"') == 1
    assert len(pool.batches) == 1 + poller.consumer.max_retries + 1


def test_an_invocation_error_bisects_the_batch(tmp_path: Path) -> None:
    # Given a function that raises on one record of a batch of four
    pool = FakePool(poison={4}, raise_instead=True)
    poller, failures = _poller(tmp_path, pool)

    # When the batch is delivered
    poller._deliver("shard-1", [_record(i) for i in range(1, 5)])

    # Then the batch is split until the poison record stands alone, and only it fails
    assert pool.batches[:3] == [["e1", "e2", "e3", "e4"], ["e1", "e2"], ["e3", "e4"]]
    assert set(pool.done) == {"e1", "e2", "e3"}
    assert failures.read_text().count('"startSequenceNumber": "00004"') == 1


def test_deliver_twice_hands_the_same_batch_again(tmp_path: Path) -> None:
    # Given a poller that simulates Lambda's at-least-once delivery
    pool = FakePool(poison=set())
    poller, _ = _poller(tmp_path, pool)
    poller.deliver_twice = True
    state = ShardState("shard-1", iterator=None, pending=[_record(1), _record(2)])

    # When the shard's pending batch is polled
    poller._poll_shard(state)

    # Then the consumer saw the same batch twice
    assert pool.batches == [["e1", "e2"], ["e1", "e2"]]


class TrimmingStreams:
    """A streams client that refuses its first iterator, as DynamoDB Local may refuse one
    taken while the shard was empty (TrimmedDataAccessException), then serves records."""

    def __init__(self) -> None:
        self.iterator_requests: list[dict[str, Any]] = []

    def get_shard_iterator(self, **request: Any) -> dict[str, str]:
        self.iterator_requests.append(request)
        return {"ShardIterator": "renewed"}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        if ShardIterator == "stale":
            raise ClientError(
                {"Error": {"Code": "TrimmedDataAccessException", "Message": "read past the oldest record"}},
                "GetRecords",
            )
        if ShardIterator == "renewed":
            return {"Records": [_record(1), _record(2)], "NextShardIterator": "after-2"}
        return {"Records": [], "NextShardIterator": ShardIterator}


def test_a_refused_iterator_is_renewed_where_reading_stopped(tmp_path: Path) -> None:
    # Given a shard whose iterator the stream refuses
    pool = FakePool(poison=set())
    poller, _ = _poller(tmp_path, pool)
    streams = TrimmingStreams()
    poller.client = streams
    state = ShardState("shard-1", iterator="stale")

    # When the shard is polled
    poller._poll_shard(state)

    # Then a new iterator is taken at the starting position, and the records are delivered
    assert streams.iterator_requests == [
        {"StreamArn": "arn:stream", "ShardId": "shard-1", "ShardIteratorType": "TRIM_HORIZON"}
    ]
    assert pool.done == ["e1", "e2"]

    # And a later renewal starts after the last record read
    state.iterator = "stale"
    poller._poll_shard(state)
    assert streams.iterator_requests[-1]["ShardIteratorType"] == "AFTER_SEQUENCE_NUMBER"
    assert streams.iterator_requests[-1]["SequenceNumber"] == "00002"
