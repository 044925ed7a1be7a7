"""The stream's half of a re-shard: a score item written where its board's layout no longer
places it (a writer that read the layout before a move's switch and wrote after the backfill
passed, or a late retry) is moved to its shard under the layout now, as the reference
architecture carries the writes made during a partition-key migration through the stream.
The aggregator sees every score item change, so none is missed; the move is conditional on
the item still being what the record shows, so a newer write wins and a redelivery is
harmless. On a board that is not being re-sharded every item is already where it belongs,
and this costs one comparison per record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from podium import keys
from podium.errors import NotFound
from podium.models import BoardSettings
from podium.ports import ReshardStore
from podium.stream.records import Record, score_record

SettingsOf = Callable[[str], BoardSettings]


def misplaced(record: Record, settings_of: SettingsOf) -> tuple[str, str, str, str, str, str] | None:
    """(board, member, period, its partition, the one it belongs in, its sort key) for a
    record whose item is left on a partition the board's layout does not place it in."""
    score = score_record(record)
    image: dict[str, Any] = record.get("dynamodb", {}).get("NewImage") or {}
    if score is None or score.new_sort_key is None or "rpk" not in image:
        return None
    try:
        settings = settings_of(score.board_id)
    except NotFound:
        return None  # the board is gone: its items go with it
    partition = str(image["rpk"]["S"])
    shard = keys.shard_of(score.member_id, settings.shards)
    belongs = keys.rank_partition_key(score.board_id, score.period, shard)
    if partition == belongs:
        return None
    return score.board_id, score.member_id, score.period, partition, belongs, score.new_sort_key


def fix_placements(records: Sequence[Record], reshards: ReshardStore, settings_of: SettingsOf) -> int:
    """Move every item the records show misplaced: how many moved."""
    moved = 0
    for record in records:
        found = misplaced(record, settings_of)
        if found is not None and reshards.move_index_entry(*found):
            moved += 1
    return moved
