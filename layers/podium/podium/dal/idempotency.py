"""The records of ``Idempotency-Key`` (``podium.idempotency``): one item per key in the
member's partition (``KEY#`` and the key's digest), holding the body's digest and the
answer, written in the same transaction as the score it answers for. A record past its
24 hours counts as absent before DynamoDB's TTL removes it."""

from __future__ import annotations

import time
from typing import Any

from podium.dal import schema
from podium.dal.client import Item, deserializer, serializer
from podium.idempotency import KEY_TTL_SECONDS, RecordedSubmission, SubmissionKey
from podium.models import ScoreChange

# A new record may replace one whose time is past, and nothing else.
ABSENT = "attribute_not_exists(pk) OR #ttl < :now"


def record_key(board_id: str, member_id: str, key: SubmissionKey) -> Item:
    return schema.submission_key(board_id, member_id, key.key)


def record_put(board_id: str, member_id: str, key: SubmissionKey, change: ScoreChange) -> dict[str, Any]:
    """The put of the record of ``change``, on the condition that the key has none."""
    now = int(time.time())
    item = {
        **record_key(board_id, member_id, key),
        "b": {"S": key.body},
        "s": serializer.serialize(change.score),
        "ttl": {"N": str(now + KEY_TTL_SECONDS)},
    }
    if change.previous_score is not None:
        item["p"] = serializer.serialize(change.previous_score)
    return {
        "Item": item,
        "ConditionExpression": ABSENT,
        "ExpressionAttributeNames": {"#ttl": "ttl"},
        "ExpressionAttributeValues": {":now": {"N": str(now)}},
    }


def recorded(item: Item | None, member_id: str) -> RecordedSubmission | None:
    """The record an item holds; None for no item, or one past its time."""
    if item is None or int(item["ttl"]["N"]) < int(time.time()):
        return None
    previous = deserializer.deserialize(item["p"]) if "p" in item else None
    change = ScoreChange(member_id, deserializer.deserialize(item["s"]), previous)
    return RecordedSubmission(item["b"]["S"], change)
