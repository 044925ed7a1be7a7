"""Stream consumer: each board's memberCount, rollups into the boards of ``rollupTo``, the
fold of the hot-counter event log, and the head and count tree of each board."""

from typing import Any

from podium.stream.entrypoint import stream_entrypoint
from podium.stream.records import is_event_insert
from podium.wiring import services


def per_batch(records: list[dict[str, Any]]) -> set[str]:
    """The batch-wide work: fold the logged events, then the heads, the member counts and
    the count trees, each in as few writes as the batch allows; the records any failed
    are retried."""
    return services().folder.fold(records) | services().aggregator.keep_batch(records)


def per_replayed_batch(records: list[dict[str, Any]]) -> set[str]:
    """A redriven batch's: the fold and the heads; the rest per record (``replay``)."""
    return services().folder.fold(records) | services().aggregator.keep_heads(records)


def apply(record: dict[str, Any]) -> None:
    if not is_event_insert(record):  # logged events were folded for the whole batch
        services().aggregator.roll_up(record)


def replay(record: dict[str, Any]) -> None:
    """A record the redrive replays, maybe after newer ones of its item."""
    if not is_event_insert(record):
        services().aggregator.apply(record, replayed=True)


lambda_handler = stream_entrypoint(
    apply,
    metric="StreamRecordsAggregated",
    prepare=per_batch,
    replay=replay,
    prepare_replay=per_replayed_batch,
)
