"""The shape every stream consumer shares: partial batch failures reported per record
(``ReportBatchItemFailures``), structured logs and metrics.

This is what Powertools' ``BatchProcessor`` + ``process_partial_response`` do for a
DynamoDB stream, in a few lines: importing the batch utility (and the event data classes
it pulls in) cost the stream consumers half a ``boto3`` import at every cold start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from podium.log import logger, metrics
from podium.stream.records import is_replay

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


class BatchFailed(Exception):
    """Every record of the batch failed: Lambda retries (or bisects) the whole batch."""


def stream_entrypoint(
    apply: Callable[[dict[str, Any]], None],
    metric: str,
    prepare: Callable[[list[dict[str, Any]]], set[str]] | None = None,
    replay: Callable[[dict[str, Any]], None] | None = None,
    prepare_replay: Callable[[list[dict[str, Any]]], set[str]] | None = None,
) -> LambdaHandler:
    """A handler that applies ``apply`` to each record of a DynamoDB stream batch and
    reports the records that raised, by sequence number, so Lambda retries from the first
    of them.

    ``prepare`` handles work done per batch rather than per record (the fold, the heads);
    it returns the eventIDs of the records it failed on, which are reported as failures
    too. ``replay``, when given, applies the records of an event the redrive built
    (``records.is_replay``): they may come after newer records of their items; the batch
    work of such an event is ``prepare_replay`` (by default ``prepare``)."""

    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        records: list[dict[str, Any]] = list(event.get("Records", []))
        metrics.add_metric(name=metric, unit=MetricUnit.Count, value=len(records))
        replaying = replay is not None and is_replay(event)
        batch_work = prepare_replay if replaying and prepare_replay is not None else prepare
        failed = batch_work(records) if batch_work is not None else set()
        applying = replay if replay is not None and replaying else apply
        failures = []
        for record in records:
            event_id = record.get("eventID")
            if event_id in failed:  # the batch work logged why
                logger.error("stream record failed: its batch work failed", extra={"eventID": event_id})
                failures.append({"itemIdentifier": record["dynamodb"]["SequenceNumber"]})
                continue
            try:
                applying(record)
            except Exception:
                logger.exception("stream record failed", extra={"eventID": event_id})
                failures.append({"itemIdentifier": record["dynamodb"]["SequenceNumber"]})
        if records and len(failures) == len(records):
            raise BatchFailed(f"all {len(records)} records of the batch failed")
        return {"batchItemFailures": failures}

    handler: LambdaHandler = metrics.log_metrics(lambda_handler, capture_cold_start_metric=True)
    return logger.inject_lambda_context(handler, clear_state=True)
