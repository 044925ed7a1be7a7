"""The local SNS and SQS (moto's server): the template's topics and queues exist there,
a tap on the notification topic sees what is published with its attributes, and the
stream consumers' on-failure destination is the template's queue."""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import requests

from devstack import template as template_module
from devstack.messaging import Messaging
from devstack.stack import failure_destination
from devstack.streams import FailureDestination, StreamPoller
from tests.helpers import unique_id
from tests.messaging import LocalStack, QueueReader, TopicTap, subscribe_to_notifications

pytestmark = pytest.mark.integration


def _record(sequence: int, created: int = 1795300000) -> dict[str, Any]:
    return {
        "eventID": f"e{sequence}",
        "eventName": "MODIFY",
        "dynamodb": {
            "Keys": {"pk": {"S": "M#b#m"}, "sk": {"S": "SCORE#all"}},
            "SequenceNumber": f"{sequence:021d}",
            "ApproximateCreationDateTime": created,
        },
    }


@pytest.fixture
def fresh_queue(stack: LocalStack) -> Any:
    sqs = stack.sqs()
    url = sqs.create_queue(QueueName=unique_id("failures"))["QueueUrl"]
    yield url
    sqs.delete_queue(QueueUrl=url)


def test_the_templates_topics_and_queues_exist_under_the_stacks_prefix(stack: LocalStack) -> None:
    # Given the template's topics and queues
    spec = template_module.read(stack.table_prefix)
    assert {"NotificationTopic", "AlarmTopic"} <= set(spec.topics())
    assert "StreamFailureQueue" in spec.queues()

    # Then each is on the local endpoint, named table prefix + logical id
    topic_names = {
        topic["TopicArn"].rsplit(":", 1)[-1]
        for page in stack.sns().get_paginator("list_topics").paginate()
        for topic in page["Topics"]
    }
    for logical, request in spec.topics().items():
        assert request["Name"] == f"{stack.table_prefix}{logical}"
        assert request["Name"] in topic_names
    sqs = stack.sqs()
    for logical, request in spec.queues().items():
        url = sqs.get_queue_url(QueueName=request["QueueName"])["QueueUrl"]
        assert url == stack.queue_url(logical)
    attributes = sqs.get_queue_attributes(
        QueueUrl=stack.queue_url("StreamFailureQueue"), AttributeNames=["MessageRetentionPeriod"]
    )["Attributes"]
    assert attributes["MessageRetentionPeriod"] == "1209600"  # taken from the template


def test_a_message_published_to_the_topic_reaches_a_tap_with_its_attributes(
    stack: LocalStack, notification_tap: TopicTap
) -> None:
    # Given a tap on the stack's notification topic
    board = unique_id("tap")
    body = {"id": uuid.uuid4().hex, "type": "overtaken", "boardId": board, "score": 52, "byScore": 58.2}

    # When a notification is published, as the notifier publishes it
    stack.sns().publish(
        TopicArn=stack.topic_arn("NotificationTopic"),
        Message=json.dumps(body),
        MessageAttributes={
            "type": {"DataType": "String", "StringValue": "overtaken"},
            "boardId": {"DataType": "String", "StringValue": board},
            "memberId": {"DataType": "String", "StringValue": "img-005.jpg"},
        },
    )

    # Then the tap receives it once: the body as sent, and the message attributes
    [message] = notification_tap.wait_for(lambda m: m.attributes.get("boardId") == board)
    assert message.body == {**body, "score": Decimal(52), "byScore": Decimal("58.2")}
    assert message.attributes == {"type": "overtaken", "boardId": board, "memberId": "img-005.jpg"}


def test_a_subscription_can_filter_on_the_message_attributes(stack: LocalStack) -> None:
    # Given a tap that wants only newLeader
    board = unique_id("filter")
    tap = subscribe_to_notifications(stack, filter_policy={"type": ["newLeader"], "boardId": [board]})
    try:
        # When an overtaken and a newLeader are published
        for kind in ("overtaken", "newLeader"):
            stack.sns().publish(
                TopicArn=tap.topic_arn,
                Message=json.dumps({"type": kind}),
                MessageAttributes={
                    "type": {"DataType": "String", "StringValue": kind},
                    "boardId": {"DataType": "String", "StringValue": board},
                },
            )

        # Then only the newLeader reaches it
        tap.wait_for(lambda m: m.attributes.get("type") == "newLeader")
        tap.receive()
        assert [m.attributes["type"] for m in tap.received] == ["newLeader"]
    finally:
        tap.close()


@pytest.mark.e2e
def test_the_stacks_notifier_publishes_to_the_notification_topic(
    stack: LocalStack, notification_tap: TopicTap
) -> None:
    # Given img-005.jpg (52) follows img-001.jpg (27) on a board of the running stack
    board = unique_id("notify")
    api = f"{stack.url}/boards/{board}"
    assert requests.put(api, json={"shards": 3}, timeout=10).status_code == 201
    for member, score in (("img-001.jpg", 27), ("img-005.jpg", 52)):
        assert requests.put(f"{api}/members/{member}", json={"score": score}, timeout=10).status_code == 201
    rivals = requests.put(
        f"{api}/members/img-005.jpg/rivals", json={"memberIds": ["img-001.jpg"]}, timeout=10
    )
    assert rivals.status_code == 200

    # When img-001.jpg passes it
    assert requests.post(f"{api}/members/img-001.jpg/score", json={"value": 31.2}, timeout=10).ok

    # Then the notifier's overtaken reaches the tap, with the attributes to filter on
    [message] = notification_tap.wait_for(
        lambda m: m.attributes.get("boardId") == board and m.attributes.get("type") == "overtaken"
    )
    assert message.attributes["memberId"] == "img-005.jpg"
    assert message.body["byMemberId"] == "img-001.jpg"
    assert message.body["byScore"] == Decimal("58.2")


def test_failure_destination_sends_the_documented_message_to_its_queue(
    stack: LocalStack, fresh_queue: str
) -> None:
    # Given a destination on a queue of the local SQS
    destination = FailureDestination(fresh_queue, stack.sqs(), fallback=Path("/nonexistent/never-written"))
    stream_arn = "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2026-11-22T00:00:00.000"

    # When a consumer gives up on two records
    destination.send("NotifierFunction", stream_arn, "shardId-1", [_record(7), _record(9)], attempts=11)

    # Then the queue holds Lambda's on-failure message: the batch's details, not the records
    [message] = QueueReader(stack.sqs(), fresh_queue).receive(wait_seconds=1)
    assert message.body["DDBStreamBatchInfo"] == {
        "shardId": "shardId-1",
        "startSequenceNumber": f"{7:021d}",
        "endSequenceNumber": f"{9:021d}",
        "approximateArrivalOfFirstRecord": "2026-11-21T22:26:40Z",
        "approximateArrivalOfLastRecord": "2026-11-21T22:26:40Z",
        "batchSize": 2,
        "streamArn": stream_arn,
    }
    context = message.body["requestContext"]
    assert context["condition"] == "RetryAttemptsExhausted"
    assert context["functionArn"].endswith(":function:NotifierFunction")
    assert context["approximateInvokeCount"] == 11
    assert message.body["version"] == "1.0"


def test_a_send_to_a_queue_that_is_gone_raises(stack: LocalStack, tmp_path: Path) -> None:
    # Given a destination whose queue does not exist
    gone = f"{stack.sqs_endpoint}/123456789012/{unique_id('gone')}"
    destination = FailureDestination(gone, stack.sqs(), fallback=tmp_path / "failures.jsonl")

    # Then a send raises, and nothing goes to the fallback file instead
    with pytest.raises(Exception, match=r"(?i)queue"):
        destination.send("AggregatorFunction", "arn:stream", "shardId-1", [_record(1)])
    assert not (tmp_path / "failures.jsonl").exists()


def test_each_consumer_sends_to_the_queue_its_template_destination_names(tmp_path: Path) -> None:
    spec = template_module.read("x-")
    messaging = Messaging("http://sns", "http://sqs", queues={"StreamFailureQueue": "http://sqs/q"})
    for consumer in spec.stream_consumers():
        # The template sends both consumers' failures to StreamFailureQueue
        assert consumer.on_failure == "StreamFailureQueue"
        destination = failure_destination(consumer, messaging, sqs=object(), fallback=tmp_path / "f")
        assert destination.queue_url == "http://sqs/q"

    # Without the queue the stack refuses to start, rather than write elsewhere
    consumer = spec.stream_consumers()[0]
    with pytest.raises(ValueError, match="StreamFailureQueue"):
        failure_destination(consumer, Messaging("http://sns", "http://sqs"), sqs=object(), fallback=tmp_path)


def test_environment_resolves_refs_to_topics_and_queues_only_from_what_was_created() -> None:
    spec = template_module.read("x-")
    arn = "arn:aws:sns:us-east-1:123456789012:x-NotificationTopic"
    # the token issuer's variables come from the stack's own issuer, as it starts
    issuer = {"AUTH_ISSUER": "http://127.0.0.1:1/_local", "AUTH_AUDIENCE": "podium-local", "CURSOR_KEY": "k"}
    environment = spec.environment({"NotificationTopic": arn}, overrides=issuer)
    assert environment["NOTIFICATION_TOPIC_ARN"] == arn
    assert environment["TABLE_NAME"] == "x-LeaderboardTable"
    assert environment["STATE_TABLE_NAME"] == "x-StateTable"
    assert environment["AUTH_ISSUER"] == issuer["AUTH_ISSUER"]
    # no Secrets Manager here: the cursor key comes from the stack itself, never a secret
    assert environment["CURSOR_SECRET_ARN"] == ""
    assert environment["CURSOR_KEY"] == "k"
    with pytest.raises(template_module.UnresolvedReference, match="NOTIFICATION_TOPIC_ARN"):
        spec.environment(overrides=issuer)
    with pytest.raises(template_module.UnresolvedReference, match="AUTH_ISSUER"):
        spec.environment({"NotificationTopic": arn})
    omitted = spec.environment(unresolved="omit")
    assert "NOTIFICATION_TOPIC_ARN" not in omitted
    assert "AUTH_ISSUER" not in omitted


def test_the_poller_retries_a_refused_send_until_the_destination_takes_it(tmp_path: Path) -> None:
    # Given a destination that refuses twice
    class Flaky(FailureDestination):
        def __init__(self) -> None:
            super().__init__(None, None, tmp_path / "failures.jsonl")
            self.refusals = 2

        def send(self, *args: Any, **kwargs: Any) -> None:
            if self.refusals:
                self.refusals -= 1
                raise ConnectionError("SQS is unreachable")
            super().send(*args, **kwargs)

    consumer = next(
        c for c in template_module.read().stream_consumers() if c.function == "AggregatorFunction"
    )
    destination = Flaky()
    poller = StreamPoller(consumer, "arn:stream", streams_client=None, destination=destination)
    poller.destination_retry_delay = 0

    # When the poller gives up on a record
    poller._give_up("shardId-1", [_record(3)], attempts=11)

    # Then the record reaches the destination once, after the refusals
    assert destination.refusals == 0
    lines = (tmp_path / "failures.jsonl").read_text().splitlines()
    assert [json.loads(line)["DDBStreamBatchInfo"]["startSequenceNumber"] for line in lines] == [f"{3:021d}"]
