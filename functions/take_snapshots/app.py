"""Scheduled (EventBridge, every SnapshotRateMinutes): record every board's top 100 and
memberCount at the schedule's time. A retried invocation writes nothing new."""

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from podium import snapshots
from podium.config import settings
from podium.log import logger, metrics
from podium.wiring import services


def take_snapshots(event: dict[str, Any], context: Any) -> dict[str, Any]:
    taken_at = snapshots.scheduled_time(event, services().clock())
    try:
        report = services().snapshots.take(taken_at, settings().snapshot_retention_days)
    except snapshots.SnapshotsFailed as error:
        metrics.add_metric(name="SnapshotBoardsFailed", unit=MetricUnit.Count, value=len(error.failed))
        raise
    metrics.add_metric(name="SnapshotsTaken", unit=MetricUnit.Count, value=len(report.written))
    return report.to_json()


lambda_handler = logger.inject_lambda_context(
    metrics.log_metrics(take_snapshots, capture_cold_start_metric=True), clear_state=True
)
