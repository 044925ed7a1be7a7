"""Configuration, read from the environment when first needed (never at import time)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class Settings:
    table_name: str
    idempotency_table_name: str
    rank_index_name: str = "RankIndex"
    notification_topic_arn: str = ""
    # Every shard of a board (at most 100) is queried at once: a round of shard queries
    # takes one round trip, not one per wave of threads.
    shard_query_concurrency: int = 100

    @classmethod
    def from_environment(cls) -> Settings:
        try:
            table = os.environ["TABLE_NAME"]
        except KeyError as error:
            raise RuntimeError("TABLE_NAME is not set: the function has no table to use") from error
        return cls(
            table_name=table,
            idempotency_table_name=os.environ.get("IDEMPOTENCY_TABLE_NAME", ""),
            rank_index_name=os.environ.get("RANK_INDEX_NAME", "RankIndex"),
            notification_topic_arn=os.environ.get("NOTIFICATION_TOPIC_ARN", ""),
            shard_query_concurrency=int(os.environ.get("SHARD_QUERY_CONCURRENCY", "100")),
        )


@cache
def settings() -> Settings:
    return Settings.from_environment()
