"""Publishing to the stack's SNS topic: a notification, with message attributes ``type``,
``boardId`` and ``memberId`` for subscription filters, or a message of its own (a period's
``periodClosed``: ``podium.results``)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from podium import numbers
from podium.models import Notification


class SnsPublisher:
    def __init__(self, topic_arn: str, client: Any = None) -> None:
        self.topic_arn = topic_arn
        self._client = client
        self._lock = threading.Lock()  # the notifier publishes from several threads at once

    def publish(self, notification: Notification) -> None:
        self.publish_message(
            notification.to_json(),
            {"type": notification.type, "boardId": notification.board_id, "memberId": notification.member_id},
        )

    def publish_message(self, body: Mapping[str, Any], attributes: Mapping[str, str]) -> None:
        """Publish ``body`` (JSON, exact numbers) with string message attributes."""
        with self._lock:
            if self._client is None:
                import boto3

                self._client = boto3.client("sns")
        self._client.publish(
            TopicArn=self.topic_arn,
            Message=numbers.dumps(dict(body)),
            MessageAttributes={
                name: {"DataType": "String", "StringValue": value} for name, value in attributes.items()
            },
        )
