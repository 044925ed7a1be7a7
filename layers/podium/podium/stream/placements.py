"""The stream's half of a re-shard: a score item whose index keys are not those its board's
layout sets now (a writer that had not seen the move yet rewrote it without its key in the
new index; or, once the clean-up began, a late writer keyed it in the old index again) is
put right, as the reference architecture carries the writes made during a partition-key
migration through the stream. The aggregator sees every score item change, so none is
missed. A key depends on the member and the shard count only, so setting it never races a
score write; each update is conditional on the item being a ranked score item still, so a
delete or hide wins and a redelivery is harmless. On a board not being re-sharded every
item has the keys its layout gives, and this costs a comparison per record."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from podium import keys
from podium.dal.schema import INDEX_KEY
from podium.errors import NotFound
from podium.models import RANK_INDEXES, BoardSettings
from podium.ports import ReshardStore
from podium.stream.records import Record, index_keys_only, score_record
from podium.values import frozen

SettingsOf = Callable[[str], BoardSettings]


@frozen
class KeyFix:
    """One score item's keys to put right: ``set`` the partitions it lacks, ``drop`` the
    indexes it should not be in."""

    board_id: str
    member_id: str
    period: str
    set: tuple[str, ...]
    drop: tuple[str, ...]


def wanted_keys(board_id: str, period: str, member_id: str, settings: BoardSettings) -> dict[str, str]:
    """The partition the member has in each index its board's layout keys it in now."""
    layouts = [(settings.index, settings.shards)] + ([settings.also] if settings.also else [])
    return {index: keys.member_partition(board_id, period, member_id, index, n) for index, n in layouts}


def key_fix(record: Record, settings_of: SettingsOf) -> KeyFix | None:
    """What a record's item needs, if anything: only a ranked item (one with ``rsk``), and
    only after a write of it. A record of a re-shard's own update (the copy, the clean-up,
    a fix-up: ``index_keys_only``) keyed the item as its phase wants; read late, in a later
    phase, it would only make the item be updated again for nothing."""
    if index_keys_only(record):
        return None
    score = score_record(record)
    image: dict[str, Any] = record.get("dynamodb", {}).get("NewImage") or {}
    if score is None or score.new_sort_key is None or "rsk" not in image:
        return None
    try:
        settings = settings_of(score.board_id)
    except NotFound:
        return None  # the board is gone: its items go with it
    wanted = wanted_keys(score.board_id, score.period, score.member_id, settings)
    has = {index: image[INDEX_KEY[index]]["S"] for index in RANK_INDEXES if INDEX_KEY[index] in image}
    to_set = tuple(p for index, p in wanted.items() if has.get(index) != p)
    to_drop = tuple(index for index in has if index not in wanted)
    if not to_set and not to_drop:
        return None
    return KeyFix(score.board_id, score.member_id, score.period, to_set, to_drop)


def fix_placements(records: Sequence[Record], reshards: ReshardStore, settings_of: SettingsOf) -> int:
    """Put right the keys of every item the records show keyed otherwise than its board's
    layout says: how many updates applied."""
    applied = 0
    for record in records:
        fix = key_fix(record, settings_of)
        if fix is None:
            continue
        for partition in fix.set:
            applied += reshards.set_index_key(fix.board_id, fix.member_id, fix.period, partition)
        for index in fix.drop:
            applied += reshards.remove_index_key(fix.board_id, fix.member_id, fix.period, index)
    return applied
