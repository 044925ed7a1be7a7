"""Stream consumer: each board's memberCount, and rollups into the boards of ``rollupTo``."""

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from podium.aggregator import Aggregator
from podium.log import logger, metrics
from podium.service import default_service

processor = BatchProcessor(event_type=EventType.DynamoDBStreams)


@cache
def aggregator() -> Aggregator:
    service = default_service()
    return Aggregator(service.store, service.board_settings, service.clock)


def record_handler(record: DynamoDBRecord) -> None:
    aggregator().apply(record.raw_event)
    metrics.add_metric(name="StreamRecordsAggregated", unit=MetricUnit.Count, value=1)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    return dict(response)
