"""The ranking index's keys: order-preserving score encoding, shards and cursors."""

from __future__ import annotations

import base64
import json
import re
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from podium import cursors, wiring
from podium.errors import ValidationError
from podium.keys import RankOrder, decode_decimal, encode_decimal, just_above, just_below, shard_of

# Scores as the API admits them: up to 38 significant digits, abs < 1e30.
scores = st.decimals(allow_nan=False, allow_infinity=False, places=None).filter(
    lambda d: (
        abs(d) < Decimal("1e30")
        and (d.is_zero() or d.adjusted() >= -130)
        and len(d.normalize().as_tuple().digits) <= 38
    )
)
member_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:@~-]{0,20}", fullmatch=True)


@given(st.lists(scores, min_size=2, max_size=30))
def test_encoding_sorts_like_the_numbers(values: list[Decimal]) -> None:
    # Given any scores
    # When they are encoded in numeric order
    encoded = [encode_decimal(v) for v in sorted(values)]
    # Then the strings are in byte order too (equal values encode equally)
    assert encoded == sorted(encoded)
    assert len(set(encoded)) == len(set(values))


@given(scores)
def test_encoding_round_trips(value: Decimal) -> None:
    decoded, rest = decode_decimal(encode_decimal(value) + "#tail")
    assert decoded == value
    assert rest == "#tail"


@given(scores, scores, member_ids, member_ids, st.booleans(), st.booleans())
def test_sort_keys_follow_the_listing_order(
    a: Decimal, b: Decimal, m: str, n: str, descending: bool, earliest: bool
) -> None:
    # Given two members on a board
    order = RankOrder(descending=descending, earliest=earliest)
    key_a = order.sort_key(a, m, 5)
    key_b = order.sort_key(b, n, 7)
    # Then a strictly better score sorts first, and the bound of a score separates
    # the strictly better entries from the rest
    better = a > b if descending else a < b
    if better:
        assert key_a < key_b
        assert key_a < order.score_bound(b)
    if a == b:
        assert not key_a < order.score_bound(b)
        if not earliest and m != n:
            assert (key_a < key_b) == (m < n)
        if earliest:
            assert key_a < key_b  # reached earlier (5 < 7) is better
    # And the key gives back its score and member
    assert order.parse(key_a) == (a if not a.is_zero() else Decimal(0), m)


def test_reference_example_order_desc() -> None:
    order = RankOrder(descending=True, earliest=False)
    views = {"img-001": 27, "img-002": 23, "img-003": 16, "img-004": 83, "img-005": 52, "img-006": 94}
    keys = sorted(order.sort_key(Decimal(v), m, 0) for m, v in views.items())
    assert [order.parse(k)[1] for k in keys[:3]] == ["img-006", "img-004", "img-005"]


def test_shards_are_stable_and_in_range() -> None:
    for shards in (1, 3, 10, 100):
        seen = {shard_of(f"user-{i}", shards) for i in range(2000)}
        assert seen <= set(range(shards))
        assert len(seen) == shards  # every shard gets members
    assert shard_of("img-006.jpg", 3) == shard_of("img-006.jpg", 3)


def test_cursor_round_trip_and_rejections() -> None:
    cursor = cursors.encode("images#all", "2501#img")
    assert cursors.decode(cursor, "images#all") == "2501#img"
    with pytest.raises(ValidationError, match="cursor"):
        cursors.decode(cursor, "other-board#all")
    with pytest.raises(ValidationError, match="cursor"):
        cursors.decode("not-a-cursor!", "images#all")
    with pytest.raises(ValidationError, match="cursor"):
        cursors.decode(cursor, "images#all", re.compile(r"\d+"))


def _edited(cursor: str, position: str) -> str:
    """The cursor with another position in its payload and its signature kept."""
    payload, key_id, signature = cursor.split(".")
    raw = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    raw["p"] = position
    forged = base64.urlsafe_b64encode(json.dumps(raw).encode()).decode().rstrip("=")
    return f"{forged}.{key_id}.{signature}"


def test_an_edited_cursor_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given a cursor the service handed out
    cursor = cursors.encode("images#all", "2501#img")

    # When a client changes its position, its signature, or drops the signature
    # Then each is 400, and so is a cursor signed with another stack's key
    for changed in (_edited(cursor, "0001#img"), cursor[:-2] + "AA", cursor.split(".")[0]):
        with pytest.raises(ValidationError, match="cursor is not valid"):
            cursors.decode(changed, "images#all")
    monkeypatch.setenv("CURSOR_KEY", "another stack's key")
    wiring.reset()
    try:
        with pytest.raises(ValidationError, match="another stack"):
            cursors.decode(cursor, "images#all")
        assert cursors.decode(cursors.encode("images#all", "2501#img"), "images#all") == "2501#img"
    finally:
        monkeypatch.delenv("CURSOR_KEY")
        wiring.reset()


ascii_keys = st.text(alphabet="#~0123456789abzAZ.-:@", min_size=1, max_size=12)


@given(ascii_keys, ascii_keys)
def test_just_below_and_just_above_keep_exactly_the_keys_on_their_side(key: str, bound: str) -> None:
    # Given any two ASCII sort keys; Then key <= just_below(bound) exactly when key < bound,
    # and key >= just_above(bound) exactly when key > bound
    assert (key <= just_below(bound)) == (key < bound)
    assert (key >= just_above(bound)) == (key > bound)
