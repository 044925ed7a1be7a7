"""Exact scores: bounds, JSON in and out."""

from __future__ import annotations

from decimal import Decimal

import pytest

from podium import numbers
from podium.errors import ValidationError


@pytest.mark.parametrize(
    ("text", "written"),
    [("42", "42"), ("42.0", "42"), ("82.30", "82.3"), ("-0.5", "-0.5"), ("1E+5", "100000"), ("0.0", "0")],
)
def test_numbers_are_written_as_given(text: str, written: str) -> None:
    assert numbers.dumps({"score": numbers.check_score(Decimal(text), "score")}) == f'{{"score":{written}}}'


def test_38_digits_survive_a_round_trip() -> None:
    text = "1234567890123456789.0123456789012345678"
    value = numbers.check_score(numbers.loads(text), "score")
    assert numbers.dumps(value) == text


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (Decimal("1e30"), "abs"),
        (Decimal("-1e30"), "abs"),
        (Decimal("1.000000000000000000000000000000000000001"), "38 significant digits"),
        (Decimal("NaN"), "finite"),
        (Decimal("Infinity"), "finite"),
        ("12", "JSON number"),
        (True, "JSON number"),
        (None, "JSON number"),
        (Decimal("1e-131"), "too small"),
    ],
)
def test_out_of_bounds_scores_are_refused_naming_the_field(value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=message) as raised:
        numbers.check_score(value, "value")
    assert "value" in raised.value.message


def test_nan_and_infinity_literals_are_not_json() -> None:
    for text in ("NaN", "Infinity", "-Infinity", '{"value": NaN}'):
        with pytest.raises(ValueError, match="not a valid JSON number"):
            numbers.loads(text)


def test_addition_is_exact_beyond_the_default_context() -> None:
    a = Decimal("9999999999999999999999999999.99999999")
    assert numbers.add(a, Decimal("0.00000001")) == Decimal("10000000000000000000000000000")


@pytest.mark.parametrize("text", ["999999999999999999999999999999", "-999999999999999999999999999999.5"])
def test_scores_just_inside_the_magnitude_limit_are_accepted(text: str) -> None:
    # abs() on a Decimal rounds to 28 digits; the bound check must not
    assert numbers.check_score(Decimal(text), "score") == Decimal(text)
