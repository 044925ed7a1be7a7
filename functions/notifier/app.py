"""Stream consumer: overtaken and newLeader notifications, to the inbox and to SNS; and
forgetting a deleted member (its followers' lists, its inbox)."""

from typing import Any

from podium.stream.entrypoint import stream_entrypoint
from podium.wiring import notifier


def begin(records: list[dict[str, Any]]) -> set[str]:
    """Each invocation tells or forgets at most one chunk of followers, over all its records."""
    notifier().begin()
    return set()


def apply(record: dict[str, Any]) -> None:
    notifier().apply(record)


lambda_handler = stream_entrypoint(apply, metric="StreamRecordsNotified", prepare=begin)
