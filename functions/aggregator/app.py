"""Stream consumer: each board's memberCount, rollups into the boards of ``rollupTo``, the
fold of the hot-counter event log, and the head and score buckets of each board."""

from functools import cache
from typing import Any

from podium.aggregator import Aggregator
from podium.events import Folder, is_event_insert
from podium.service import default_service
from podium.streaming import stream_entrypoint


@cache
def aggregator() -> Aggregator:
    service = default_service()
    return Aggregator(service.store, service.board_settings, service.clock)


@cache
def folder() -> Folder:
    service = default_service()
    return Folder(service.store, service.board_settings, service.clock)


def per_batch(records: list[dict[str, Any]]) -> set[str]:
    """The batch-wide work: fold the logged events, then bring each board's head up to
    date (one write per board and batch); the records either failed are retried."""
    return folder().fold(records) | aggregator().keep_heads(records)


def apply(record: dict[str, Any]) -> None:
    if not is_event_insert(record):  # logged events were folded for the whole batch
        aggregator().apply(record)


lambda_handler = stream_entrypoint(apply, metric="StreamRecordsAggregated", prepare=per_batch)
