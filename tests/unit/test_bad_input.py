"""Bodies that parse as JSON but that no later step could handle are refused at the parse,
with a 400 that names where: a lone UTF-16 surrogate (valid JSON, not valid Unicode),
nesting past the limit (the encoders recurse), and a number in member data that DynamoDB's
Number type cannot hold exactly."""

from __future__ import annotations

from decimal import Decimal

import pytest

from podium import validation
from podium.errors import ValidationError


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ('{"data": {"a": "\\ud800"}}', "data.a"),
        ('{"title": "x\\udc00y"}', "title"),
        ('{"data": {"\\ud800": 1}}', "a key in data"),
        ('{"events": [{"memberId": "m", "value": 1, "eventId": "\\udfff"}]}', "events[0].eventId"),
        ('{"data": {"list": ["ok", "\\ud83d"]}}', "data.list[1]"),
    ],
)
def test_a_lone_surrogate_is_400_naming_where(body: str, where: str) -> None:
    # Given a body whose string holds half of a UTF-16 pair
    # When it is parsed, then it is refused, naming the string
    with pytest.raises(ValidationError) as refused:
        validation.json_object(body)
    assert refused.value.message.startswith(where)
    assert "surrogate" in refused.value.message


def test_a_surrogate_pair_is_a_character() -> None:
    # Given an emoji written as its escaped pair, then it parses as the one character
    assert validation.json_object('{"data": {"e": "\\ud83d\\ude00"}}') == {"data": {"e": "\U0001f600"}}


@pytest.mark.parametrize("levels", [validation.MAX_JSON_DEPTH + 1, 5_000, 100_000])
def test_nesting_past_the_limit_is_400(levels: int) -> None:
    # Given a body nested deeper than the limit (up to far past Python's recursion limit)
    body = '{"data": ' + "[" * levels + "]" * levels + "}"
    # When it is parsed, then it is refused, naming the limit
    with pytest.raises(ValidationError, match=f"deeper than {validation.MAX_JSON_DEPTH} levels"):
        validation.json_object(body)


def test_nesting_up_to_the_limit_is_fine() -> None:
    # Given a body exactly at the limit (the body itself is the first level)
    inner = validation.MAX_JSON_DEPTH - 1
    body = '{"data": ' + "[" * (inner - 1) + "{}" + "]" * (inner - 1) + "}"
    # Then it parses
    assert "data" in validation.json_object(body)


# Found by the fuzzer (tests/e2e/test_fuzz.py): a number in member data that DynamoDB cannot
# hold (-1.7976931348623157e+308) was 500, from the size check's encoder on.
@pytest.mark.parametrize(
    ("body", "where"),
    [
        ('{"data": {"a": [1, -1.7976931348623157e+308]}}', "data.a[1]"),
        ('{"data": {"big": 1e126}}', "data.big"),
        ('{"data": {"tiny": 1e-131}}', "data.tiny"),
        ('{"data": {"x": {"y": 1234567890123456789012345678901234567.89}}}', "data.x.y"),
        ('{"data": {"huge": 1E999999999}}', "data.huge"),
    ],
)
def test_a_number_in_data_that_dynamodb_cannot_hold_is_400_naming_where(body: str, where: str) -> None:
    # Given member data holding a number past DynamoDB's 38 digits or its range
    # When the member request is read, then it is refused, naming the number's place
    with pytest.raises(ValidationError) as refused:
        validation.member_request(validation.json_object(body))
    assert refused.value.message.startswith(where)
    assert "38 significant digits" in refused.value.message


def test_numbers_in_data_up_to_dynamodb_limits_are_kept() -> None:
    # Given member data at the edges of DynamoDB's Number type
    body = '{"data": {"big": -9.9999999999999999999999999999999999999e125, "tiny": 1e-130, "zero": 0.0}}'
    # Then they are taken as they are
    data = validation.member_request(validation.json_object(body)).data
    assert data == {
        "big": Decimal("-9.9999999999999999999999999999999999999e125"),
        "tiny": Decimal("1e-130"),
        "zero": 0,
    }
