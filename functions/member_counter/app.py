"""Stream consumer: keeps each board's memberCount from the table's change stream."""

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType, process_partial_response
from aws_lambda_powertools.utilities.data_classes.dynamo_db_stream_event import DynamoDBRecord

from podium import counting
from podium.log import logger, metrics
from podium.store import default_store

processor = BatchProcessor(event_type=EventType.DynamoDBStreams)


def record_handler(record: DynamoDBRecord) -> None:
    keys = record.dynamodb.keys if record.dynamodb else None
    if not keys or record.event_name is None or record.event_id is None:
        return
    if counting.apply_record(default_store(), record.event_id, record.event_name.name, keys):
        metrics.add_metric(name="MemberCountChanged", unit=MetricUnit.Count, value=1)


@logger.inject_lambda_context(clear_state=True)
@metrics.log_metrics(capture_cold_start_metric=True)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    response = process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    return dict(response)
