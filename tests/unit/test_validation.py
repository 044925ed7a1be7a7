"""Bad input gets a 4xx that names the field and the limit."""

from __future__ import annotations

from decimal import Decimal

import pytest

from podium import validation
from podium.errors import PayloadTooLarge, ValidationError
from podium.models import BoardSettings


@pytest.mark.parametrize("good", ["a", "images", "A.b_c:d-e", "x" * 128])
def test_board_ids_that_match_the_contract(good: str) -> None:
    assert validation.board_id(good) == good


@pytest.mark.parametrize("bad", ["", "-a", "a/b", "a#b", "x" * 129, "a b", "é"])
def test_board_ids_that_do_not(bad: str) -> None:
    with pytest.raises(ValidationError, match="boardId"):
        validation.board_id(bad)


@pytest.mark.parametrize("good", ["u", "user@example.com", "a~b", "img-006.jpg", "x" * 200])
def test_member_ids_that_match_the_contract(good: str) -> None:
    assert validation.member_id(good) == good


@pytest.mark.parametrize("bad", ["", "_a", "a#b", "x" * 201, 12])
def test_member_ids_that_do_not(bad: object) -> None:
    with pytest.raises(ValidationError, match="memberId"):
        validation.member_id(bad)


def test_board_defaults_and_choices() -> None:
    request = validation.board_request({})
    assert request.settings == BoardSettings()
    assert request.settings.shards == 10
    with pytest.raises(ValidationError, match="shards must be an integer from 1 to 100"):
        validation.board_request({"shards": Decimal(101)})
    with pytest.raises(ValidationError, match="shards"):
        validation.board_request({"shards": Decimal("2.5")})
    with pytest.raises(ValidationError, match="order must be one of desc, asc"):
        validation.board_request({"order": "up"})
    with pytest.raises(ValidationError, match="unknown field 'color'"):
        validation.board_request({"color": "red"})
    with pytest.raises(ValidationError, match="title"):
        validation.board_request({"title": "t" * 201})


def test_bodies_must_be_json_objects() -> None:
    assert validation.json_object(None) == {}
    with pytest.raises(ValidationError, match="required"):
        validation.json_object("", required=True)
    with pytest.raises(ValidationError, match="JSON object"):
        validation.json_object("[1]")
    with pytest.raises(ValidationError, match="not valid JSON"):
        validation.json_object("{")
    with pytest.raises(PayloadTooLarge, match="256 KiB"):
        validation.json_object('{"a": "' + "x" * (256 * 1024) + '"}')


def test_member_data_limit_and_types() -> None:
    with pytest.raises(PayloadTooLarge, match="64 KiB"):
        validation.member_request({"data": {"blob": "x" * (64 * 1024)}})
    with pytest.raises(ValidationError, match="data must be a JSON object"):
        validation.member_request({"data": [1]})
    assert validation.member_request({"score": Decimal("82.3")}).score == Decimal("82.3")


def test_score_value_and_member_id_lists() -> None:
    with pytest.raises(ValidationError, match="value is required"):
        validation.score_value({})
    with pytest.raises(ValidationError, match="value must be a JSON number"):
        validation.score_value({"value": "1"})
    assert validation.member_ids({"memberIds": ["a", "b", "a"]}) == ["a", "b"]
    with pytest.raises(ValidationError, match="1 to 100"):
        validation.member_ids({"memberIds": []})
    with pytest.raises(ValidationError, match="1 to 100"):
        validation.member_ids({"memberIds": [f"m{i}" for i in range(101)]})


def test_query_parameters() -> None:
    assert validation.query_int({}, "limit", 10, 1, 1000) == 10
    assert validation.query_int({"limit": "1000"}, "limit", 10, 1, 1000) == 1000
    for bad in ("0", "1001", "ten", "1.5", ""):
        with pytest.raises(ValidationError, match="limit must be an integer from 1 to 1000"):
            validation.query_int({"limit": bad}, "limit", 10, 1, 1000)
    assert validation.query_bool({"withData": "true"}, "withData") is True
    with pytest.raises(ValidationError, match="withData must be true or false"):
        validation.query_bool({"withData": "yes"}, "withData")


def test_hidden_is_a_boolean_the_member_request_carries() -> None:
    # Given bodies that hide, show, leave alone, and misname the flag
    # When they are validated
    hiding = validation.member_request({"hidden": True})
    showing = validation.member_request({"hidden": False, "score": Decimal(3)})
    untouched = validation.member_request({"data": {}})

    # Then the request carries the flag (for the admin-only check) or None
    assert (hiding.hidden, showing.hidden, untouched.hidden) == (True, False, None)
    assert showing.score == Decimal(3)
    # and anything but a JSON boolean is a 400 that names the field
    wrongs: tuple[object, ...] = ("true", 1, Decimal(0), None, {})
    for wrong in wrongs:
        with pytest.raises(ValidationError, match="hidden must be true or false"):
            validation.member_request({"hidden": wrong})
