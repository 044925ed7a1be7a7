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


def stream_entrypoint(apply: Callable[[dict[str, Any]], None], metric: str) -> LambdaHandler:
    """A handler that applies ``apply`` to each record of a DynamoDB stream batch and
    reports the records that raised, so Lambda retries from the first of them."""
    processor = BatchProcessor(event_type=EventType.DynamoDBStreams)

    def record_handler(record: DynamoDBRecord) -> None:
        apply(record.raw_event)
        metrics.add_metric(name=metric, unit=MetricUnit.Count, value=1)

    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        response = process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
        return dict(response)

    handler: LambdaHandler = metrics.log_metrics(lambda_handler, capture_cold_start_metric=True)
    return logger.inject_lambda_context(handler, clear_state=True)
