"""How the stream consumers read a hide and an unhide off a stream record: a member
leaving and arriving (counts, index keys), and a change that tells no one."""

from __future__ import annotations

from typing import Any

from podium.stream.records import CountChange, count_change, score_record

Image = dict[str, Any]

PROFILE_KEYS = {"pk": {"S": "M#b1#cheat"}, "sk": {"S": "MEMBER"}}
DAY_KEYS = {"pk": {"S": "M#b1#cheat"}, "sk": {"S": "SCORE#2026-11-22"}}
SHOWN: Image = {"s": {"N": "50"}, "v": {"N": "3"}, "t": {"N": "1000"}, "rpk": {"S": "b1#2026-11-22#0"}}
SHOWN = {**SHOWN, "rsk": {"S": "0496949~#cheat"}}
HIDDEN: Image = {
    "s": {"N": "50"},
    "v": {"N": "4"},
    "t": {"N": "1000"},
    "hd": {"BOOL": True},
    "ht": {"N": "9000"},
}


def _record(event: str, keys: Image, old: Image | None, new: Image | None) -> dict[str, Any]:
    stream: dict[str, Any] = {"Keys": keys, "ApproximateCreationDateTime": 1_800_000_000}
    if old is not None:
        stream["OldImage"] = old
    if new is not None:
        stream["NewImage"] = new
    return {"eventID": "e1", "eventName": event, "dynamodb": stream}


def test_a_hide_and_an_unhide_move_the_counts_and_nothing_else_does() -> None:
    # Given a profile and a period's score item, shown and hidden
    profile: Image = {"data": {"S": "{}"}}
    hidden_profile: Image = {**profile, "hidden": {"BOOL": True}}

    # When their changes are read as member counts
    def change(event: str, keys: Image, old: Image | None, new: Image | None) -> CountChange | None:
        return count_change(_record(event, keys, old, new))

    # Then hiding leaves the board and its period, showing joins them again
    assert change("MODIFY", PROFILE_KEYS, profile, hidden_profile) == CountChange("b1", -1)
    assert change("MODIFY", PROFILE_KEYS, hidden_profile, profile) == CountChange("b1", 1)
    assert change("MODIFY", DAY_KEYS, SHOWN, HIDDEN) == CountChange("b1", -1, "2026-11-22")
    assert change("MODIFY", DAY_KEYS, HIDDEN, SHOWN) == CountChange("b1", 1, "2026-11-22")
    # and a member created hidden, deleted hidden, or changed while hidden counts nowhere
    assert change("INSERT", PROFILE_KEYS, None, hidden_profile) is None
    assert change("REMOVE", PROFILE_KEYS, hidden_profile, None) is None
    assert change("INSERT", DAY_KEYS, None, HIDDEN) is None
    assert change("MODIFY", DAY_KEYS, HIDDEN, {**HIDDEN, "s": {"N": "70"}}) is None
    assert change("MODIFY", PROFILE_KEYS, hidden_profile, {**hidden_profile, "data": {"S": "[]"}}) is None
    # while a shown member still joins and leaves as before
    assert change("INSERT", PROFILE_KEYS, None, profile) == CountChange("b1", 1)
    assert change("REMOVE", DAY_KEYS, SHOWN, None) == CountChange("b1", -1, "2026-11-22")
    assert change("MODIFY", DAY_KEYS, SHOWN, {**SHOWN, "s": {"N": "60"}}) is None


def test_a_hide_is_a_departure_from_the_index_timed_when_the_stream_saw_it() -> None:
    # Given the score item of a member being hidden, then changed while hidden
    # When the records are read as score changes
    hide = score_record(_record("MODIFY", DAY_KEYS, SHOWN, HIDDEN))
    later = score_record(
        _record("MODIFY", DAY_KEYS, HIDDEN, {**HIDDEN, "s": {"N": "70"}, "t": {"N": "2000"}})
    )

    # Then the hide takes the member's key away, at the time of the hide (its score is old)
    assert hide is not None
    assert later is not None
    assert (hide.old_sort_key, hide.new_sort_key, hide.hidden) == (SHOWN["rsk"]["S"], None, True)
    assert hide.changed_us == 9000
    # (an item without that time is timed by the stream)
    untimed = {k: v for k, v in HIDDEN.items() if k != "ht"}
    unhide = score_record(_record("MODIFY", DAY_KEYS, untimed, SHOWN))
    assert unhide is not None
    assert unhide.changed_us == 1_800_000_000 * 1_000_000
    assert (unhide.old_sort_key, unhide.new_sort_key, unhide.hidden) == (None, SHOWN["rsk"]["S"], False)
    assert not hide.changed
    # and a later change moves no key, and is marked hidden (so it tells no one)
    assert (later.old_sort_key, later.new_sort_key, later.hidden, later.changed) == (None, None, True, True)
    assert later.changed_us == 2000
