"""Scheduled (EventBridge, every minute): carry every board's re-shard a step further, for
up to RESHARD_BUDGET_SECONDS, from the checkpoint its board keeps. Runs that overlap share
the work by a lease, and a killed run is resumed by the next. A board whose step fails is
logged and the others go on; the run then fails (ReshardsFailed) so that it shows."""

from datetime import timedelta
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from podium.config import settings
from podium.log import logger, metrics
from podium.resharding import ReshardsFailed
from podium.wiring import services


def run_reshards(event: dict[str, Any], context: Any) -> dict[str, Any]:
    budget = timedelta(seconds=settings().reshard_budget_seconds)
    failed: ReshardsFailed | None = None
    try:
        report = services().resharding.run_reshards(budget)
    except ReshardsFailed as error:
        report, failed = error.report, error
    metrics.add_metric(name="ReshardItemsCopied", unit=MetricUnit.Count, value=report.copied)
    if failed is not None:
        metrics.add_metric(name="ReshardsFailed", unit=MetricUnit.Count, value=len(report.failed))
        raise failed
    return {"boards": report.boards, "copied": report.copied, "ended": report.ended}


lambda_handler = logger.inject_lambda_context(
    metrics.log_metrics(run_reshards, capture_cold_start_metric=True), clear_state=True
)
