"""What tests use to read what the local stack sent: a fresh SQS queue subscribed to its
notification topic (a tap), and its stream failure queue."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class LocalStack:
    """The local stack the session started (``python -m devstack``)."""

    url: str
    table_prefix: str
    sns_endpoint: str
    sqs_endpoint: str
    log_path: Path | None = None  # what its functions logged

    def errors_logged(self, most: int = 20) -> str:
        """The last ``most`` lines of its log that tell of an error: what a test that
        waited in vain shows of why."""
        if self.log_path is None or not self.log_path.exists():
            return "(no log)"
        lines = self.log_path.read_text(errors="replace").splitlines()
        telling = ("ERROR", "Error:", "failed", "devstack.streams WARNING")
        found = [line[:600] for line in lines if any(word in line for word in telling)]
        return "\n".join(found[-most:]) or "(no errors logged)"

    def sns(self) -> Any:
        import boto3

        return boto3.client("sns", endpoint_url=self.sns_endpoint)

    def sqs(self) -> Any:
        import boto3

        return boto3.client("sqs", endpoint_url=self.sqs_endpoint)

    def topic_arn(self, logical_id: str = "NotificationTopic") -> str:
        """The ARN of the stack's topic: the one whose name is the table prefix and the
        template's logical id."""
        found = []
        for page in self.sns().get_paginator("list_topics").paginate():
            for topic in page["Topics"]:
                name = topic["TopicArn"].rsplit(":", 1)[-1]
                if name.startswith(self.table_prefix) and name.endswith(logical_id):
                    found.append(topic["TopicArn"])
        assert len(found) == 1, f"expected one {self.table_prefix}…{logical_id} topic, found {found}"
        return str(found[0])

    def queue_url(self, logical_id: str = "StreamFailureQueue") -> str:
        return str(self.sqs().get_queue_url(QueueName=f"{self.table_prefix}{logical_id}")["QueueUrl"])

    def queued(self, logical_id: str = "StreamFailureQueue") -> int:
        """The messages on the queue, visible or being handled."""
        attributes = self.sqs().get_queue_attributes(
            QueueUrl=self.queue_url(logical_id),
            AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
        )["Attributes"]
        return int(attributes["ApproximateNumberOfMessages"]) + int(
            attributes["ApproximateNumberOfMessagesNotVisible"]
        )


@dataclass(frozen=True)
class Message:
    """One SQS message: the body (JSON, numbers as exact Decimals, when it is JSON) and the
    message attributes as name -> string value."""

    body: Any
    attributes: dict[str, str]
    raw: dict[str, Any] = field(repr=False)


def _message(raw: dict[str, Any]) -> Message:
    try:
        body: Any = json.loads(raw["Body"], parse_float=Decimal, parse_int=Decimal)
    except ValueError:
        body = raw["Body"]
    attributes = {
        name: str(value.get("StringValue", value.get("BinaryValue", "")))
        for name, value in raw.get("MessageAttributes", {}).items()
    }
    return Message(body=body, attributes=attributes, raw=raw)


class QueueReader:
    """Reads an SQS queue: every message received is deleted from it and kept here, so a
    reader sees each message once and can wait for the ones it expects."""

    def __init__(self, sqs: Any, queue_url: str) -> None:
        self.sqs = sqs
        self.queue_url = queue_url
        self.received: list[Message] = []

    def receive(self, wait_seconds: int = 0) -> list[Message]:
        """The messages that arrived since the last call (one long poll of up to
        ``wait_seconds``, then whatever else is there)."""
        fresh: list[Message] = []
        wait = wait_seconds
        while True:
            response = self.sqs.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=wait,
                MessageAttributeNames=["All"],
                AttributeNames=["All"],
            )
            raw = response.get("Messages", [])
            if not raw:
                break
            for message in raw:
                self.sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"])
            fresh.extend(_message(m) for m in raw)
            wait = 0
        self.received.extend(fresh)
        return fresh

    def wait_for(
        self, predicate: Callable[[Message], bool], count: int = 1, timeout: float = 15.0
    ) -> list[Message]:
        """Every message received so far that satisfies ``predicate``, once there are at
        least ``count`` of them; AssertionError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            matching = [m for m in self.received if predicate(m)]
            if len(matching) >= count:
                return matching
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{len(matching)} of {count} expected message(s) on {self.queue_url} within "
                    f"{timeout} s; received {[m.body for m in self.received]}"
                )
            self.receive(wait_seconds=1)


class TopicTap(QueueReader):
    """A fresh SQS queue subscribed to a topic with raw message delivery: each message on
    it is what was published, body and message attributes as they were sent."""

    def __init__(
        self, sns: Any, sqs: Any, topic_arn: str, filter_policy: dict[str, Any] | None = None
    ) -> None:
        queue_url = sqs.create_queue(QueueName=f"tap-{uuid.uuid4().hex[:12]}")["QueueUrl"]
        super().__init__(sqs, queue_url)
        self.sns = sns
        self.topic_arn = topic_arn
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"][
            "QueueArn"
        ]
        attributes = {"RawMessageDelivery": "true"}
        if filter_policy is not None:
            attributes["FilterPolicy"] = json.dumps(filter_policy)
        self.subscription_arn = sns.subscribe(
            TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn, Attributes=attributes
        )["SubscriptionArn"]

    def close(self) -> None:
        self.sns.unsubscribe(SubscriptionArn=self.subscription_arn)
        self.sqs.delete_queue(QueueUrl=self.queue_url)


def subscribe_to_notifications(stack: LocalStack, filter_policy: dict[str, Any] | None = None) -> TopicTap:
    """A tap on the stack's NotificationTopic; ``close()`` it when done."""
    return TopicTap(stack.sns(), stack.sqs(), stack.topic_arn("NotificationTopic"), filter_policy)


def stream_failures(stack: LocalStack) -> QueueReader:
    """A reader of the stack's StreamFailureQueue: what the stream consumers gave up on."""
    return QueueReader(stack.sqs(), stack.queue_url("StreamFailureQueue"))
