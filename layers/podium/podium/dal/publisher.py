"""Publishing a notification to the stack's SNS topic, with message attributes ``type``,
``boardId`` and ``memberId`` for subscription filters."""

from __future__ import annotations

import threading
from typing import Any

from podium import numbers
from podium.models import Notification


class SnsPublisher:
    def __init__(self, topic_arn: str, client: Any = None) -> None:
        self.topic_arn = topic_arn
        self._client = client
        self._lock = threading.Lock()  # the notifier publishes from several threads at once

    def publish(self, notification: Notification) -> None:
        with self._lock:
            if self._client is None:
                import boto3

                self._client = boto3.client("sns")
        self._client.publish(
            TopicArn=self.topic_arn,
            Message=numbers.dumps(notification.to_json()),
            MessageAttributes={
                "type": {"DataType": "String", "StringValue": notification.type},
                "boardId": {"DataType": "String", "StringValue": notification.board_id},
                "memberId": {"DataType": "String", "StringValue": notification.member_id},
            },
        )
