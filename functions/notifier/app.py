"""Stream consumer: overtaken and newLeader notifications, to the inbox and to SNS; and
forgetting a deleted member (its followers' lists, its inbox)."""

from typing import Any

from podium.stream.entrypoint import stream_entrypoint
from podium.wiring import notifier


def begin(records: list[dict[str, Any]]) -> set[str]:
    """Each invocation tells or forgets at most one chunk of followers, over all its records;
    the batch's leader judgments are made together, a read of each board's leader for all
    its records."""
    notifier().begin()
    return notifier().check_leaders(records)


def apply(record: dict[str, Any]) -> None:
    notifier().tell(record)


lambda_handler = stream_entrypoint(apply, metric="StreamRecordsNotified", prepare=begin)
