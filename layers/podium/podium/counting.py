"""Keeping each board's ``memberCount`` from the table's change stream.

A member is born with the INSERT of its ``MEMBER`` item and leaves with its REMOVE;
every other record changes no count. Each record is applied at most once, keyed by
the stream's own event id, so a redelivered record or a retried batch never counts twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from podium.store import Store, parse_member_pk


@dataclass(frozen=True)
class CountChange:
    board_id: str
    delta: int


def count_change(event_name: str, keys: dict[str, Any]) -> CountChange | None:
    pk = str(keys.get("pk", ""))
    if str(keys.get("sk", "")) != "MEMBER" or not pk.startswith("M#"):
        return None
    board_id, _ = parse_member_pk(pk)
    if event_name == "INSERT":
        return CountChange(board_id, 1)
    if event_name == "REMOVE":
        return CountChange(board_id, -1)
    return None


def apply_record(store: Store, event_id: str, event_name: str, keys: dict[str, Any]) -> bool:
    """Apply one stream record; True when it changed a count."""
    change = count_change(event_name, keys)
    if change is None:
        return False
    return store.apply_member_count(event_id, change.board_id, change.delta)
