"""Reading the table's change stream: what a record says about a member's score.

Records arrive as the Lambda event source mapping delivers them (attribute values in
DynamoDB's JSON). Only what the consumers need is decoded.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from boto3.dynamodb.types import TypeDeserializer

from podium.store import parse_member_pk

_deserializer = TypeDeserializer()


@dataclass(frozen=True)
class ScoreRecord:
    """A change of one member's score item (``SCORE#{period}``)."""

    event_id: str
    event_name: str
    board_id: str
    member_id: str
    period: str
    old: Decimal | None
    new: Decimal | None
    new_sort_key: str | None
    old_sort_key: str | None
    # When the change happened, the same on every delivery of the record: the score's
    # reachedAt for a write, the stream's timestamp for a removal.
    changed_us: int
    # The latest reachedAt the record carries, exactly: of the new score, else of the one
    # removed (podium.buckets.Change).
    written_us: int = 0

    @property
    def changed(self) -> bool:
        return self.old != self.new


def _number(image: dict[str, Any] | None, name: str) -> Decimal | None:
    if not image or name not in image:
        return None
    value = _deserializer.deserialize(image[name])
    assert isinstance(value, Decimal)
    return value


def keys_of(record: dict[str, Any]) -> tuple[str, str]:
    keys = record.get("dynamodb", {}).get("Keys", {})
    return str(keys.get("pk", {}).get("S", "")), str(keys.get("sk", {}).get("S", ""))


def score_record(record: dict[str, Any]) -> ScoreRecord | None:
    pk, sk = keys_of(record)
    if not (pk.startswith("M#") and sk.startswith("SCORE#")):
        return None
    board_id, member_id = parse_member_pk(pk)
    stream = record["dynamodb"]
    new_image = stream.get("NewImage")
    old_image = stream.get("OldImage")
    reached = _number(new_image, "t")
    approximate = Decimal(str(stream.get("ApproximateCreationDateTime", 0)))
    return ScoreRecord(
        event_id=str(record["eventID"]),
        event_name=str(record["eventName"]),
        board_id=board_id,
        member_id=member_id,
        period=sk.split("#", 1)[1],
        old=_number(old_image, "s"),
        new=_number(new_image, "s"),
        new_sort_key=new_image["rsk"]["S"] if new_image and "rsk" in new_image else None,
        old_sort_key=old_image["rsk"]["S"] if old_image and "rsk" in old_image else None,
        changed_us=int(reached) if reached is not None else int(approximate * 1_000_000),
        written_us=int(max(_number(new_image, "t") or 0, _number(old_image, "t") or 0)),
    )


def derived_id(*parts: str) -> str:
    """A deterministic id for an effect of a stream record (the same on redelivery)."""
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:24]
