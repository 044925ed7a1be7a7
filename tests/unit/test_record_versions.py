"""Where a stream record stands among its member's changes: the score item's incarnation
(when it was made) and version, so that a consumer can tell a late or repeated record of
a member from a newer one, also across a delete and a new start."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from podium.dal import codecs
from podium.models import ScoreState
from podium.stream.records import score_record

Image = dict[str, Any]
KEYS = {"pk": {"S": "M#b1#ana"}, "sk": {"S": "SCORE#all"}}


def _image(version: int, made: int | None) -> Image:
    image: Image = {"s": {"N": str(version * 10)}, "v": {"N": str(version)}, "t": {"N": "1000"}}
    if made is not None:
        image["ci"] = {"N": str(made)}
    return image


def _record(event: str, old: Image | None, new: Image | None) -> Any:
    stream: dict[str, Any] = {"Keys": KEYS, "ApproximateCreationDateTime": 1_800_000_000}
    if old is not None:
        stream["OldImage"] = old
    if new is not None:
        stream["NewImage"] = new
    record = score_record({"eventID": "e1", "eventName": event, "dynamodb": stream})
    assert record is not None
    return record


def test_a_member_s_records_compare_in_the_order_they_were_written() -> None:
    # Given the life of one score item made at 500: written three times, then removed,
    # and the member's new start at 900
    made, again = 500, 900
    life = [
        _record("INSERT", None, _image(1, made)),
        _record("MODIFY", _image(1, made), _image(2, made)),
        _record("MODIFY", _image(2, made), _image(3, made)),
        _record("REMOVE", _image(3, made), None),
        _record("INSERT", None, _image(1, again)),
        _record("MODIFY", _image(1, again), _image(2, again)),
    ]

    # When their versions are read
    versions = [record.version for record in life]

    # Then each comes after the one before: the removal after the last write of its item,
    # and the new start after the removal
    assert versions == sorted(versions)
    assert len(set(versions)) == len(versions)
    assert versions[3] == (made, 4)
    assert versions[4] == (again, 1)


def test_an_item_from_before_incarnations_were_kept_orders_by_its_version() -> None:
    assert _record("MODIFY", _image(1, None), _image(2, None)).version == (0, 2)


def test_a_score_item_keeps_when_it_was_made_through_every_write() -> None:
    # Given a member's first score, then two changes and a hide
    first = ScoreState.first(Decimal(5), 1_000)
    later = first.then(Decimal(7), 2_000).then(Decimal(9), 3_000).shown(False, 4_000)

    # When it is written as an item and read back
    item = codecs.score_attributes(later, "b1#all#0", "k", None)
    back = codecs.score_from_item(item)

    # Then it still says when the item was made
    assert first.created_us == later.created_us == back.created_us == 1_000
    assert back.version == 4
