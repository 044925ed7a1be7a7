"""The redrive's logic (``podium.redrive``) with stand-ins for the queue, the stream and the
consumer: which messages are replayed, kept or deleted, and what reaches the consumer.
End to end, against the local stack: tests/e2e/test_redrive.py."""

from __future__ import annotations

import json
from typing import Any

import pytest

from devstack.streams import failure_message
from podium.dal.streams import QueuedMessage, StreamRecords
from podium.errors import RecordsGone
from podium.redrive import CHUNK_RECORDS, DISCARDED, GONE, KEPT, REPLAYED, UNREADABLE, FailedBatch, Redrive
from podium.stream.records import REPLAY

STREAM = "arn:aws:dynamodb:us-east-2:123456789012:table/podium/stream/2026-11-14T00:04:06.388"
FUNCTION = "arn:aws:lambda:us-east-2:123456789012:function:podium-AggregatorFunction-Ab12Cd34"

# The invocation record of the Lambda developer guide's example, for a DynamoDB stream.
AWS_EXAMPLE = {
    "requestContext": {
        "requestId": "316aa6d0-8154-xmpl-9af7-85d5f4a6bc81",
        "functionArn": FUNCTION,
        "condition": "RetryAttemptsExhausted",
        "approximateInvokeCount": 1,
    },
    "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
    "version": "1.0",
    "timestamp": "2019-11-14T00:13:49.717Z",
    "DDBStreamBatchInfo": {
        "shardId": "shardId-00000001573689847184-864758bb",
        "startSequenceNumber": "800000000003126276362",
        "endSequenceNumber": "800000000003126276362",
        "approximateArrivalOfFirstRecord": "2019-11-14T00:13:19Z",
        "approximateArrivalOfLastRecord": "2019-11-14T00:13:19Z",
        "batchSize": 1,
        "streamArn": STREAM,
    },
}


def record(sequence: int, board: str = "b", sk: str = "SCORE#all", event: str = "MODIFY") -> dict[str, Any]:
    return {
        "eventID": f"e{sequence}",
        "eventName": event,
        "eventSource": "aws:dynamodb",
        "dynamodb": {
            "Keys": {"pk": {"S": f"M#{board}#m{sequence}"}, "sk": {"S": sk}},
            "SequenceNumber": str(sequence),
        },
        "eventSourceARN": STREAM,
    }


def message(first: int, last: int, message_id: str = "m1") -> QueuedMessage:
    body = json.loads(json.dumps(AWS_EXAMPLE))
    body["DDBStreamBatchInfo"].update(startSequenceNumber=str(first), endSequenceNumber=str(last))
    return QueuedMessage(message_id, json.dumps(body), f"receipt-{message_id}")


class Queue:
    def __init__(self, *messages: QueuedMessage) -> None:
        self.visible = list(messages)
        self.hidden: list[QueuedMessage] = []
        self.deleted: list[str] = []

    def receive(self) -> list[QueuedMessage]:
        taken, self.visible = self.visible[:10], self.visible[10:]
        self.hidden.extend(taken)
        return taken

    def delete(self, message: QueuedMessage) -> None:
        self.hidden.remove(message)
        self.deleted.append(message.message_id)

    def release(self, message: QueuedMessage) -> None:
        self.hidden.remove(message)
        self.visible.append(message)


class Stream:
    def __init__(self, records: list[dict[str, Any]], gone: bool = False) -> None:
        self.records = records
        self.gone = gone

    def between(self, stream_arn: str, shard_id: str, first: str, last: str) -> list[dict[str, Any]]:
        if self.gone:
            raise RecordsGone(f"shard {shard_id}: TrimmedDataAccessException")
        return [r for r in self.records if int(first) <= int(r["dynamodb"]["SequenceNumber"]) <= int(last)]


class Consumer:
    def __init__(self, patterns: list[Any] | None = None, poison: set[str] | None = None) -> None:
        self.patterns = patterns or []
        self.poison = poison or set()
        self.raises = False
        self.events: list[list[str]] = []

    def filters(self, function_arn: str, stream_arn: str) -> list[Any]:
        assert (function_arn, stream_arn) == (FUNCTION, STREAM)
        return self.patterns

    def invoke(self, function_arn: str, event: dict[str, Any]) -> list[str]:
        assert event[REPLAY] is True  # the consumer is told: these may come after newer records
        self.events.append([r["eventID"] for r in event["Records"]])
        if self.raises:
            raise RuntimeError("the database is down")
        return [r["dynamodb"]["SequenceNumber"] for r in event["Records"] if r["eventID"] in self.poison]


def test_the_aws_invocation_record_is_read_as_lambda_writes_it() -> None:
    batch = FailedBatch.parse(json.dumps(AWS_EXAMPLE))
    assert batch.function == "podium-AggregatorFunction-Ab12Cd34"
    assert (batch.shard_id, batch.first, batch.last, batch.size) == (
        "shardId-00000001573689847184-864758bb",
        "800000000003126276362",
        "800000000003126276362",
        1,
    )
    assert batch.stream_arn == STREAM
    assert batch.condition == "RetryAttemptsExhausted"


def test_the_local_stack_writes_the_same_shape_as_lambda() -> None:
    local = failure_message("AggregatorFunction", STREAM, "shardId-1", [record(7), record(9)], attempts=11)
    assert set(local) == set(AWS_EXAMPLE)
    assert set(local["requestContext"]) == set(AWS_EXAMPLE["requestContext"])
    assert set(local["DDBStreamBatchInfo"]) <= set(AWS_EXAMPLE["DDBStreamBatchInfo"])
    batch = FailedBatch.parse(json.dumps(local))
    assert (batch.function, batch.first, batch.last, batch.size) == ("AggregatorFunction", "7", "9", 2)


def test_a_replayed_message_is_deleted_and_the_consumer_gets_the_records_in_order() -> None:
    # Given a failed batch of three records, one of which the consumer's filters leave out
    queue = Queue(message(2, 4))
    consumer = Consumer(patterns=[{"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "SCORE#"}]}}}}])
    stream = Stream([record(1), record(2), record(3, sk="RIVALS"), record(4, board="other"), record(5)])

    # When the redrive runs
    report = Redrive(queue, stream, consumer).run()

    # Then the consumer got the filtered records of the batch, in one event, and the
    # message is gone from the queue
    assert consumer.events == [["e2", "e4"]]
    assert [o.status for o in report.outcomes] == [REPLAYED]
    assert report.outcomes[0].boards == ("b", "other")
    assert report.ok
    assert queue.deleted == ["m1"]
    assert queue.visible == queue.hidden == []


def test_a_message_the_consumer_fails_again_is_kept_and_visible_again() -> None:
    queue = Queue(message(1, 1, "poison"), message(2, 2, "fine"))
    consumer = Consumer(poison={"e1"})
    report = Redrive(queue, Stream([record(1), record(2)]), consumer).run()

    assert [(o.message_id, o.status) for o in report.outcomes] == [("poison", KEPT), ("fine", REPLAYED)]
    assert "sequence number(s) 1" in report.outcomes[0].detail
    assert not report.ok
    assert queue.deleted == ["fine"]
    assert [m.message_id for m in queue.visible] == ["poison"]  # for the next run and the alarm


def test_a_consumer_that_raises_keeps_the_message() -> None:
    queue = Queue(message(1, 1))
    consumer = Consumer()
    consumer.raises = True
    report = Redrive(queue, Stream([record(1)]), consumer).run()
    assert report.outcomes[0].status == KEPT
    assert "the database is down" in report.outcomes[0].detail
    assert [m.message_id for m in queue.visible] == ["m1"]


def test_records_past_the_retention_are_reported_and_kept_unless_discarded() -> None:
    queue = Queue(message(1, 1))
    consumer = Consumer()
    report = Redrive(queue, Stream([], gone=True), consumer).run()
    assert report.outcomes[0].status == GONE
    assert "make verify" in report.outcomes[0].detail
    assert "TrimmedDataAccessException" in report.outcomes[0].detail
    assert [m.message_id for m in queue.visible] == ["m1"]

    # When the operator asks to discard them (after checking the boards)
    report = Redrive(queue, Stream([], gone=True), consumer).run(discard_gone=True)
    assert report.outcomes[0].status == DISCARDED
    assert report.ok
    assert queue.deleted == ["m1"]
    assert consumer.events == []


def test_a_message_that_is_not_an_invocation_record_is_kept() -> None:
    queue = Queue(QueuedMessage("junk", '{"hello": 1}', "r"))
    report = Redrive(queue, Stream([]), Consumer()).run()
    assert report.outcomes[0].status == UNREADABLE
    assert [m.message_id for m in queue.visible] == ["junk"]


def test_a_dry_run_replays_nothing_and_keeps_everything() -> None:
    queue = Queue(message(1, 2))
    consumer = Consumer()
    report = Redrive(queue, Stream([record(1), record(2)]), consumer).run(dry_run=True)
    assert report.outcomes[0].records == 2
    assert consumer.events == []
    assert queue.deleted == []
    assert len(queue.visible) == 1


def test_a_big_batch_is_replayed_in_chunks_within_lambdas_payload_limit() -> None:
    count = CHUNK_RECORDS * 2 + 5
    queue = Queue(message(1, count))
    consumer = Consumer()
    report = Redrive(queue, Stream([record(i) for i in range(1, count + 1)]), consumer).run()
    assert [len(event) for event in consumer.events] == [CHUNK_RECORDS, CHUNK_RECORDS, 5]
    assert [e for event in consumer.events for e in event] == [f"e{i}" for i in range(1, count + 1)]
    assert report.outcomes[0].records == count
    assert queue.deleted == ["m1"]


class StreamsClient:
    """DynamoDB Streams' GetShardIterator and GetRecords over one shard, two records a page."""

    def __init__(self, sequences: list[int], trimmed_before: int = 0) -> None:
        self.sequences = sequences
        self.trimmed_before = trimmed_before

    def get_shard_iterator(self, **request: Any) -> dict[str, Any]:
        from botocore.exceptions import ClientError

        if int(request["SequenceNumber"]) < self.trimmed_before:
            raise ClientError({"Error": {"Code": "TrimmedDataAccessException"}}, "GetShardIterator")
        assert request["ShardIteratorType"] == "AT_SEQUENCE_NUMBER"
        return {"ShardIterator": str(self.sequences.index(int(request["SequenceNumber"])))}

    def get_records(self, ShardIterator: str, Limit: int) -> dict[str, Any]:
        at = int(ShardIterator)
        page = self.sequences[at : at + 2]
        return {
            "Records": [
                {"eventID": f"e{s}", "eventName": "MODIFY", "dynamodb": {"SequenceNumber": str(s)}}
                for s in page
            ],
            "NextShardIterator": str(at + 2),
        }


def test_the_stream_is_read_from_the_first_sequence_number_to_the_last() -> None:
    reader = StreamRecords(StreamsClient([10, 20, 30, 40, 50, 60]))
    records = reader.between(STREAM, "shard", "20", "50")
    assert [r["dynamodb"]["SequenceNumber"] for r in records] == ["20", "30", "40", "50"]
    assert all(r["eventSourceARN"] == STREAM and r["eventSource"] == "aws:dynamodb" for r in records)


@pytest.mark.parametrize(
    ("client", "first", "why"),
    [
        (StreamsClient([10, 20], trimmed_before=15), "10", "TrimmedDataAccessException"),
        (StreamsClient([10, 20]), "20", "ends at sequence number 20, before the last record"),
    ],
)
def test_records_the_stream_no_longer_has_are_gone(client: StreamsClient, first: str, why: str) -> None:
    with pytest.raises(RecordsGone, match=why):
        StreamRecords(client).between(STREAM, "shard", first, "30")


class LambdaClient:
    """Lambda's ListEventSourceMappings (one page) and a synchronous Invoke."""

    def __init__(self, answer: Any, function_error: str | None = None) -> None:
        self.answer = answer
        self.function_error = function_error
        self.invoked: list[dict[str, Any]] = []

    def get_paginator(self, operation: str) -> Any:
        assert operation == "list_event_source_mappings"
        client = self

        class Pages:
            def paginate(self, **request: Any) -> list[dict[str, Any]]:
                client.invoked.append(request)
                pattern = '{"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "SCORE#"}]}}}}'
                return [{"EventSourceMappings": [{"FilterCriteria": {"Filters": [{"Pattern": pattern}]}}]}]

        return Pages()

    def invoke(self, **request: Any) -> dict[str, Any]:
        import io

        self.invoked.append(request)
        response: dict[str, Any] = {
            "StatusCode": 200,
            "Payload": io.BytesIO(json.dumps(self.answer).encode()),
        }
        if self.function_error:
            response["FunctionError"] = self.function_error
        return response


def test_a_deployed_consumer_is_invoked_with_the_event_and_its_failures_read() -> None:
    from podium.dal.streams import LambdaConsumers

    client = LambdaClient({"batchItemFailures": [{"itemIdentifier": "7"}]})
    consumers = LambdaConsumers(client)
    assert consumers.filters(FUNCTION, STREAM) == [
        {"dynamodb": {"Keys": {"sk": {"S": [{"prefix": "SCORE#"}]}}}}
    ]
    assert client.invoked[0] == {"FunctionName": FUNCTION, "EventSourceArn": STREAM}
    assert consumers.invoke(FUNCTION, {"Records": [record(7)]}) == ["7"]
    sent = client.invoked[1]
    assert sent["FunctionName"] == FUNCTION
    assert sent["InvocationType"] == "RequestResponse"
    assert json.loads(sent["Payload"])["Records"][0]["eventID"] == "e7"
    assert LambdaConsumers(LambdaClient(None)).invoke(FUNCTION, {"Records": []}) == []


def test_a_deployed_consumer_that_raised_is_a_failure() -> None:
    from podium.dal.streams import ConsumerFailed, LambdaConsumers

    client = LambdaClient(
        {"errorType": "ValueError", "errorMessage": "the rolled-up score leaves the bounds"}, "Unhandled"
    )
    with pytest.raises(ConsumerFailed, match="leaves the bounds"):
        LambdaConsumers(client).invoke(FUNCTION, {"Records": [record(1)]})


def test_the_queue_is_found_in_the_stacks_outputs() -> None:
    from podium.dal.streams import stack_output

    class CloudFormation:
        def describe_stacks(self, StackName: str) -> dict[str, Any]:
            assert StackName == "podium"
            return {
                "Stacks": [{"Outputs": [{"OutputKey": "StreamFailureQueueUrl", "OutputValue": "https://q"}]}]
            }

    assert stack_output("podium", "StreamFailureQueueUrl", CloudFormation()) == "https://q"
    with pytest.raises(LookupError, match="no output Nope"):
        stack_output("podium", "Nope", CloudFormation())
