"""Stream consumer: overtaken and newLeader notifications, to the inbox and to SNS."""

from functools import cache
from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from podium.config import settings
from podium.log import logger, metrics
from podium.notifier import Notifier, SnsPublisher
from podium.service import default_service

processor = BatchProcessor(event_type=EventType.DynamoDBStreams)


@cache
def notifier() -> Notifier:
    service = default_service()
    return Notifier(service.store, SnsPublisher(settings().notification_topic_arn), service.board_settings)


def record_handler(record: DynamoDBRecord) -> None:
    notifier().apply(record.raw_event)
    metrics.add_metric(name="StreamRecordsNotified", unit=MetricUnit.Count, value=1)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    return dict(response)
