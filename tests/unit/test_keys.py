"""The ranking index's keys: order-preserving score encoding, shards and cursors."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from podium import cursors
from podium.errors import ValidationError
from podium.keys import RankOrder, decode_decimal, encode_decimal, shard_of

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
