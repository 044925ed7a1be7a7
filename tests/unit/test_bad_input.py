"""Bodies that parse as JSON but that no later step could handle are refused at the parse,
with a 400 that names where: a lone UTF-16 surrogate (valid JSON, not valid Unicode) and
nesting past the limit (the encoders recurse)."""

from __future__ import annotations

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
