"""Stream consumer: each board's memberCount, and rollups into the boards of ``rollupTo``."""

from functools import cache
from typing import Any

from podium.aggregator import Aggregator
from podium.service import default_service
from podium.streaming import stream_entrypoint


@cache
def aggregator() -> Aggregator:
    service = default_service()
    return Aggregator(service.store, service.board_settings, service.clock)


def apply(record: dict[str, Any]) -> None:
    aggregator().apply(record)


lambda_handler = stream_entrypoint(apply, metric="StreamRecordsAggregated")
