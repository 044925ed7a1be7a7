"""Stream consumer: overtaken and newLeader notifications, to the inbox and to SNS."""

from functools import cache
from typing import Any

from podium.config import settings
from podium.notifier import Notifier, SnsPublisher
from podium.service import default_service
from podium.streaming import stream_entrypoint


@cache
def notifier() -> Notifier:
    service = default_service()
    return Notifier(service.store, SnsPublisher(settings().notification_topic_arn), service.board_settings)


def apply(record: dict[str, Any]) -> None:
    notifier().apply(record)


lambda_handler = stream_entrypoint(apply, metric="StreamRecordsNotified")
