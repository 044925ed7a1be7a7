"""What the redrive (``podium.redrive``) reads and calls: the table's stream, by shard and
sequence number; the stream consumers' on-failure queue (SQS); and, against a deployed
stack, the consumer functions (Lambda) and the stack's outputs (CloudFormation). None of
the service's functions use this module: it is the operator's tooling."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from podium.errors import RecordsGone
from podium.values import frozen

# Reading a shard stops after this many empty pages in a row short of the last record.
EMPTY_PAGES = 3
# A message taken off the failure queue stays hidden from other readers this long, so two
# redrives never replay one message at once; the redrive hands back what it keeps.
VISIBILITY_SECONDS = 900
GONE = ("TrimmedDataAccessException", "ResourceNotFoundException")


def _code(error: Exception) -> str:
    return str(getattr(error, "response", {}).get("Error", {}).get("Code", ""))


def _gone(error: Exception) -> RecordsGone:
    message = getattr(error, "response", {}).get("Error", {}).get("Message", "") or str(error)
    return RecordsGone(f"{_code(error)}: {message}")


def lambda_record(record: dict[str, Any], stream_arn: str) -> dict[str, Any]:
    """A DynamoDB Streams record (as ``GetRecords`` returns it through boto3, or as its
    JSON says: the time as seconds since the epoch), as the Lambda event source mapping
    delivers it."""
    dynamodb = dict(record["dynamodb"])
    created = dynamodb.get("ApproximateCreationDateTime")
    if isinstance(created, datetime):
        dynamodb["ApproximateCreationDateTime"] = int(created.timestamp())
    elif isinstance(created, float):
        dynamodb["ApproximateCreationDateTime"] = int(created)
    return {
        "eventID": record["eventID"],
        "eventName": record["eventName"],
        "eventVersion": record.get("eventVersion", "1.1"),
        "eventSource": "aws:dynamodb",
        "awsRegion": record.get("awsRegion", "us-east-1"),
        "dynamodb": dynamodb,
        "eventSourceARN": stream_arn,
    }


def _sequence(record: dict[str, Any]) -> int:
    return int(record["dynamodb"]["SequenceNumber"])


class StreamRecords:
    """The records of one shard of a DynamoDB stream between two sequence numbers."""

    def __init__(self, client: Any = None, endpoint_url: str | None = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("dynamodbstreams", endpoint_url=endpoint_url)
        self.client = client

    def between(self, stream_arn: str, shard_id: str, first: str, last: str) -> list[dict[str, Any]]:
        """Every record from sequence number ``first`` to ``last`` (both included), in the
        Lambda event's shape; ``RecordsGone`` when the stream no longer has them."""
        iterator: str | None = self._iterator(stream_arn, shard_id, "AT_SEQUENCE_NUMBER", first)
        records: list[dict[str, Any]] = []
        empty = 0
        while iterator and empty < EMPTY_PAGES:
            try:
                response = self.client.get_records(ShardIterator=iterator, Limit=1000)
            except Exception as error:
                if _code(error) == "ExpiredIteratorException" and records:
                    after = records[-1]["dynamodb"]["SequenceNumber"]
                    iterator = self._iterator(stream_arn, shard_id, "AFTER_SEQUENCE_NUMBER", after)
                    continue
                if _code(error) in GONE:
                    raise _gone(error) from error
                raise
            page = [lambda_record(record, stream_arn) for record in response.get("Records", [])]
            records.extend(r for r in page if _sequence(r) <= int(last))
            if any(_sequence(r) >= int(last) for r in page):
                break
            empty = 0 if page else empty + 1
            iterator = response.get("NextShardIterator")
        if not records or _sequence(records[0]) != int(first):
            raise RecordsGone(f"the record at sequence number {first} is no longer on the shard")
        if _sequence(records[-1]) != int(last):
            raise RecordsGone(
                f"the shard ends at sequence number {records[-1]['dynamodb']['SequenceNumber']}, "
                f"before the last record ({last})"
            )
        return records

    def _iterator(self, stream_arn: str, shard_id: str, kind: str, sequence: str) -> str:
        try:
            response = self.client.get_shard_iterator(
                StreamArn=stream_arn, ShardId=shard_id, ShardIteratorType=kind, SequenceNumber=sequence
            )
        except Exception as error:
            if _code(error) in GONE:
                raise _gone(error) from error
            raise
        return str(response["ShardIterator"])


@frozen
class QueuedMessage:
    message_id: str
    body: str
    receipt_handle: str


class FailureQueue:
    """The on-failure queue of the stream consumers (SQS). A message received is hidden
    from other readers until it is deleted or released."""

    def __init__(self, queue_url: str, client: Any = None, endpoint_url: str | None = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("sqs", endpoint_url=endpoint_url)
        self.client = client
        self.queue_url = queue_url

    def __str__(self) -> str:
        return self.queue_url

    def receive(self) -> list[QueuedMessage]:
        """Up to 10 messages; none when the queue is empty (a long poll of a second makes
        sure of it: a short one may miss messages)."""
        response = self.client.receive_message(
            QueueUrl=self.queue_url,
            MaxNumberOfMessages=10,
            WaitTimeSeconds=1,
            VisibilityTimeout=VISIBILITY_SECONDS,
        )
        return [
            QueuedMessage(m["MessageId"], m["Body"], m["ReceiptHandle"]) for m in response.get("Messages", [])
        ]

    def delete(self, message: QueuedMessage) -> None:
        self.client.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message.receipt_handle)

    def release(self, message: QueuedMessage) -> None:
        """Make a message visible again at once (it stays on the queue)."""
        self.client.change_message_visibility(
            QueueUrl=self.queue_url, ReceiptHandle=message.receipt_handle, VisibilityTimeout=0
        )


class ConsumerFailed(Exception):
    """The consumer function raised (Lambda's ``FunctionError``)."""


class LambdaConsumers:
    """The deployed stream consumers: their event source mappings' filter criteria, and a
    synchronous invocation with a batch of records."""

    def __init__(self, client: Any = None) -> None:
        if client is None:
            import boto3

            client = boto3.client("lambda")
        self.client = client

    def filters(self, function_arn: str, stream_arn: str) -> list[Any]:
        patterns: list[Any] = []
        paginator = self.client.get_paginator("list_event_source_mappings")
        for page in paginator.paginate(FunctionName=function_arn, EventSourceArn=stream_arn):
            for mapping in page.get("EventSourceMappings", []):
                for entry in (mapping.get("FilterCriteria") or {}).get("Filters", []):
                    patterns.append(json.loads(entry["Pattern"]))
        return patterns

    def invoke(self, function_arn: str, event: dict[str, Any]) -> list[str]:
        """Invoke and wait; the sequence numbers of the records the function reported as
        failed (``batchItemFailures``). ``ConsumerFailed`` when it raised."""
        response = self.client.invoke(
            FunctionName=function_arn, InvocationType="RequestResponse", Payload=json.dumps(event).encode()
        )
        payload = json.loads(response["Payload"].read() or b"null")
        if response.get("FunctionError"):
            detail = payload if not isinstance(payload, dict) else payload.get("errorMessage", payload)
            raise ConsumerFailed(f"{function_arn} raised: {detail}")
        failures = payload.get("batchItemFailures") if isinstance(payload, dict) else None
        return [str(f["itemIdentifier"]) for f in failures or []]


def stack_output(stack_name: str, key: str, client: Any = None) -> str:
    """An output of a deployed CloudFormation stack (``StreamFailureQueueUrl``)."""
    if client is None:
        import boto3

        client = boto3.client("cloudformation")
    stacks = client.describe_stacks(StackName=stack_name)["Stacks"]
    for output in stacks[0].get("Outputs", []):
        if output["OutputKey"] == key:
            return str(output["OutputValue"])
    raise LookupError(f"the stack {stack_name} has no output {key}")
