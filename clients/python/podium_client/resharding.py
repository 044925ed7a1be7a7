"""A board's move to another shard count, as ``Board.reshard`` shows it while it runs."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class ReshardProgress:
    """A re-shard on: where to, since when, and how many members have moved so far."""

    to_shards: int
    started_at: datetime
    copied: int

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> ReshardProgress:
        started = datetime.fromisoformat(str(body["startedAt"]).replace("Z", "+00:00"))
        return cls(to_shards=int(body["toShards"]), started_at=started, copied=int(body["copied"]))
