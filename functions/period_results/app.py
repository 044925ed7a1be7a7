"""Scheduled (EventBridge, every minute): announce the final results of every ended period
of every time-windowed board, each exactly once (podium.results)."""

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from podium import results
from podium.log import logger, metrics
from podium.wiring import announcer, services


def announce_period_results(event: dict[str, Any], context: Any) -> dict[str, Any]:
    try:
        report = services().period_results(announcer()).announce_due(services().clock())
    except results.PeriodResultsFailed as error:
        metrics.add_metric(name="PeriodResultsBoardsFailed", unit=MetricUnit.Count, value=len(error.failed))
        raise
    metrics.add_metric(name="PeriodsAnnounced", unit=MetricUnit.Count, value=len(report.announced))
    metrics.add_metric(name="PeriodResultsTold", unit=MetricUnit.Count, value=report.told)
    return report.to_json()


lambda_handler = logger.inject_lambda_context(
    metrics.log_metrics(announce_period_results, capture_cold_start_metric=True), clear_state=True
)
