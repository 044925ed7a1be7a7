"""Which of the service's two tables an item lives in (docs/data-model.md, "Two tables").

The streamed table holds what the change stream must carry to its consumers (members'
profiles and scores, the event log, the notifier's fan-out jobs) and the ranking indexes
over them; the state table, which has no stream, holds everything kept from that stream or
beside it. An item's partition key decides (``schema.streamed``), so every request of the
data-access layer finds its table from the key it names: one rule, in one place.
"""

from __future__ import annotations

import re
from typing import Any

from podium.config import Settings
from podium.dal import schema

# A query's partition key in its key condition: ``pk = :value``.
_PK_CONDITION = re.compile(r"(?:^|\s)pk\s*=\s*(:\w+)")


def table_for(settings: Settings, pk: str) -> str:
    """The table that holds the items of partition key ``pk``."""
    return settings.table if schema.streamed(pk) else settings.state_table


def partition_of(request: dict[str, Any]) -> str:
    """The partition key of a single-item request or a transaction's action: its key's, or
    its item's."""
    key = request.get("Key") or request["Item"]
    return str(key["pk"]["S"])


def table_of_query(settings: Settings, request: dict[str, Any]) -> str:
    """The table a query reads: the streamed one for its indexes, else its partition's (the
    value its key condition gives ``pk``)."""
    if "IndexName" in request:
        return settings.table
    found = _PK_CONDITION.search(request.get("KeyConditionExpression", ""))
    if found is None:
        condition = request.get("KeyConditionExpression")
        raise ValueError(f"cannot tell which table a query of {condition!r} reads")
    return table_for(settings, request["ExpressionAttributeValues"][found.group(1)]["S"])
