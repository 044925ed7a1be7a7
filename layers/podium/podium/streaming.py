"""The shape every stream consumer shares: Powertools batch processing with partial
failures reported per record, structured logs and metrics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from podium.log import logger, metrics

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def stream_entrypoint(
    apply: Callable[[dict[str, Any]], None],
    metric: str,
    prepare: Callable[[list[dict[str, Any]]], set[str]] | None = None,
) -> LambdaHandler:
    """A handler that applies ``apply`` to each record of a DynamoDB stream batch and
    reports the records that raised, so Lambda retries from the first of them.

    ``prepare`` handles work done per batch rather than per record (the fold); it returns
    the eventIDs of the records it failed on, which are then reported as failures too."""
    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)
    failed: set[str] = set()

    def record_handler(record: DynamoDBRecord) -> None:
        if record.event_id in failed:
            raise RuntimeError(f"the batch work for record {record.event_id} failed")
        apply(record.raw_event)

    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        failed.clear()
        metrics.add_metric(name=metric, unit=MetricUnit.Count, value=len(event.get("Records", [])))
        if prepare is not None:
            failed.update(prepare(list(event.get("Records", []))))
        response = process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
        return dict(response)

    handler: LambdaHandler = metrics.log_metrics(lambda_handler, capture_cold_start_metric=True)
    return logger.inject_lambda_context(handler, clear_state=True)
