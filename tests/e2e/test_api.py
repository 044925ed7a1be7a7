"""The HTTP contract of docs/api.md (docs/openapi.yaml), end to end: boards, members, scores and
rankings, over HTTP against the local stack (``python -m devstack`` on DynamoDB Local).

Every test makes its own board with ``unique_id`` so that tests are independent; the
assertions are the ones a client of the API would make on status codes and JSON bodies.
"""

from __future__ import annotations

import json as json_module
import re
from decimal import Decimal
from typing import Any

import pytest
import requests

from tests.helpers import BOARD_FIELDS, IMAGE_VIEWS, MEMBER_FIELDS, decimal_json, eventually, unique_id

pytestmark = pytest.mark.e2e

TIMEOUT = 30
ISO_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")

IMAGES = IMAGE_VIEWS
IMAGES_IN_ORDER = ["img-006.jpg", "img-004.jpg", "img-005.jpg", "img-001.jpg", "img-002.jpg", "img-003.jpg"]


# -- helpers ------------------------------------------------------------------------------


def send(
    method: str,
    url: str,
    raw: str | bytes | None = None,
    *,
    json: Any = None,
    headers: dict[str, str] | None = None,
    params: dict[str, Any] | None = None,
) -> requests.Response:
    """One request; ``raw`` is sent as the body text as is (for exact decimals and bad JSON)."""
    all_headers = {"Content-Type": "application/json", **(headers or {})}
    return requests.request(
        method, url, data=raw, json=json, headers=all_headers, params=params, timeout=TIMEOUT
    )


def board_url(stack_url: str, board: str) -> str:
    return f"{stack_url}/boards/{board}"


def member_url(stack_url: str, board: str, member: str) -> str:
    return f"{stack_url}/boards/{board}/members/{member}"


def create_board(stack_url: str, prefix: str, **settings: Any) -> str:
    board = unique_id(prefix)
    response = send("PUT", board_url(stack_url, board), json=settings)
    assert response.status_code == 201, response.text
    return board


def add_member(
    stack_url: str, board: str, member: str, score: str | int | None = None, data: Any = None
) -> requests.Response:
    parts = []
    if score is not None:
        parts.append(f'"score": {score}')
    if data is not None:
        parts.append(f'"data": {json_module.dumps(data)}')
    response = send("PUT", member_url(stack_url, board, member), "{" + ", ".join(parts) + "}")
    assert response.status_code in (200, 201), response.text
    return response


def submit(
    stack_url: str, board: str, member: str, value: str | int, headers: dict[str, str] | None = None
) -> requests.Response:
    return send(
        "POST", f"{member_url(stack_url, board, member)}/score", f'{{"value": {value}}}', headers=headers
    )


def get_member(stack_url: str, board: str, member: str) -> requests.Response:
    return send("GET", member_url(stack_url, board, member))


def score_of(stack_url: str, board: str, member: str) -> Decimal:
    response = get_member(stack_url, board, member)
    assert response.status_code == 200, response.text
    score = decimal_json(response)["score"]
    assert isinstance(score, Decimal)
    return score


def top(stack_url: str, board: str, **params: Any) -> requests.Response:
    return send("GET", f"{board_url(stack_url, board)}/top", params=params)


def listing(stack_url: str, board: str, **params: Any) -> list[tuple[int, str, Any]]:
    """The (rank, memberId, score) entries of the first page, read from the ranking index."""
    response = top(stack_url, board, consistent="true", **params)
    assert response.status_code == 200, response.text
    return [(int(e["rank"]), e["memberId"], e["score"]) for e in decimal_json(response)["entries"]]


def wait_for_member_count(stack_url: str, board: str, expected: int) -> None:
    def check() -> None:
        response = send("GET", board_url(stack_url, board))
        assert response.status_code == 200
        assert response.json()["memberCount"] == expected

    eventually(check)


def assert_error(response: requests.Response, status: int, code: str, *mentions: str) -> dict[str, Any]:
    """The response is the contract's error: the status, a JSON body with the code, and a
    message for a person that names what was wrong (any one of ``mentions``) and no stack trace."""
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"code", "message"}
    assert body["code"] == code
    message = body["message"]
    assert isinstance(message, str)
    assert message.strip()
    assert "Traceback" not in message
    assert 'File "' not in message
    if mentions:
        assert any(m.lower() in message.lower() for m in mentions), message
    return dict(body)


def images_board(stack_url: str) -> str:
    board = create_board(stack_url, "images", shards=3)
    for member, views in IMAGES.items():
        add_member(stack_url, board, member, views, data={"owner": f"owner-of-{member}"})
    return board


# -- boards -------------------------------------------------------------------------------


def test_put_board_creates_it_with_the_defaults(stack_url: str) -> None:
    # Given a board id that does not exist yet
    board = unique_id("defaults")

    # When it is created with an empty body
    response = send("PUT", board_url(stack_url, board), "{}")

    # Then it is 201 with the board and every default setting
    assert response.status_code == 201, response.text
    body = response.json()
    assert set(body) == BOARD_FIELDS
    assert body["boardId"] == board
    assert (body["order"], body["operator"], body["tieBreak"], body["shards"]) == (
        "desc",
        "increment",
        "shared",
        10,
    )
    assert body["title"] is None
    assert body["memberCount"] == 0
    assert ISO_UTC.match(body["createdAt"]), body["createdAt"]


def test_put_board_with_settings_then_get_it(stack_url: str) -> None:
    # Given a board created with every setting given
    board = unique_id("settings")
    settings = {"order": "asc", "operator": "best", "tieBreak": "earliest", "shards": 7, "title": "Lap times"}
    created = send("PUT", board_url(stack_url, board), json=settings)
    assert created.status_code == 201, created.text

    # When it is read back
    response = send("GET", board_url(stack_url, board))

    # Then it is the same board
    assert response.status_code == 200
    body = response.json()
    assert body == created.json()
    assert {k: body[k] for k in settings} == settings
    assert ISO_UTC.match(body["createdAt"])


def test_re_put_of_the_same_body_is_200_with_the_board(stack_url: str) -> None:
    # Given a board
    settings = {"order": "asc", "shards": 4, "title": "Same"}
    board = create_board(stack_url, "same", **settings)

    # When the creation body is sent again
    response = send("PUT", board_url(stack_url, board), json=settings)

    # Then it is 200 with the unchanged board
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["boardId"], body["order"], body["shards"], body["title"]) == (board, "asc", 4, "Same")


def test_re_put_with_a_new_title_updates_the_title(stack_url: str) -> None:
    # Given a board with a title
    board = create_board(stack_url, "title", title="Old title")

    # When it is PUT again with another title
    response = send("PUT", board_url(stack_url, board), json={"title": "New title"})

    # Then it is 200 and the title is the new one, also when read later
    assert response.status_code == 200, response.text
    assert response.json()["title"] == "New title"
    assert send("GET", board_url(stack_url, board)).json()["title"] == "New title"


def test_re_put_without_a_title_keeps_the_title(stack_url: str) -> None:
    # Given a board with a title
    board = create_board(stack_url, "keep-title", title="Kept")

    # When it is PUT again without a title
    response = send("PUT", board_url(stack_url, board), "{}")

    # Then the title is kept
    assert response.status_code == 200, response.text
    assert response.json()["title"] == "Kept"
    assert send("GET", board_url(stack_url, board)).json()["title"] == "Kept"


@pytest.mark.parametrize(
    ("setting", "value"),
    [("order", "asc"), ("operator", "best"), ("tieBreak", "earliest"), ("shards", 5)],
)
def test_re_put_with_a_different_fixed_setting_is_409(stack_url: str, setting: str, value: Any) -> None:
    # Given a board with the default settings
    board = create_board(stack_url, "conflict", title="Fixed")

    # When it is PUT again with one fixed setting changed
    response = send("PUT", board_url(stack_url, board), json={setting: value})

    # Then it is 409 naming the setting, and the board is unchanged
    assert_error(response, 409, "Conflict", setting)
    body = send("GET", board_url(stack_url, board)).json()
    assert (body["order"], body["operator"], body["tieBreak"], body["shards"]) == (
        "desc",
        "increment",
        "shared",
        10,
    )


def test_re_put_with_an_empty_body_of_a_board_with_3_shards_is_409(stack_url: str) -> None:
    # Given a board created with 3 shards
    board = create_board(stack_url, "shards3", shards=3)

    # When it is PUT again with {} (a setting left out means its default, 10 shards)
    response = send("PUT", board_url(stack_url, board), "{}")

    # Then it is a conflict on shards
    assert_error(response, 409, "Conflict", "shards")
    assert send("GET", board_url(stack_url, board)).json()["shards"] == 3


def test_get_a_missing_board_is_404(stack_url: str) -> None:
    # Given a board id that was never created
    board = unique_id("missing")

    # When it is read
    response = send("GET", board_url(stack_url, board))

    # Then it is 404 NotFound
    assert_error(response, 404, "NotFound", board)


def test_list_boards_pages_through_every_board_once(stack_url: str) -> None:
    # Given three new boards (other tests' boards may be listed too)
    mine = {create_board(stack_url, "listed", title=f"listed {i}") for i in range(3)}

    # When the list is walked a board at a time, following nextCursor
    seen: list[str] = []
    cursor: str | None = None
    for _ in range(10_000):
        params: dict[str, Any] = {"limit": 1}
        if cursor is not None:
            params["cursor"] = cursor
        response = send("GET", f"{stack_url}/boards", params=params)
        assert response.status_code == 200, response.text
        body = response.json()
        assert set(body) == {"boards", "nextCursor"}
        assert len(body["boards"]) <= 1
        seen.extend(b["boardId"] for b in body["boards"])
        cursor = body["nextCursor"]
        if cursor is None:
            break

    # Then no board is listed twice, and each of mine appears exactly once
    assert len(seen) == len(set(seen))
    assert mine <= set(seen)


def test_list_boards_shows_the_board_representation(stack_url: str) -> None:
    # Given a board
    board = create_board(stack_url, "listed-one", title="Shown")

    # When the boards are listed, walking every page
    found: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 100}
        if cursor is not None:
            params["cursor"] = cursor
        body = send("GET", f"{stack_url}/boards", params=params).json()
        found.extend(b for b in body["boards"] if b["boardId"] == board)
        cursor = body["nextCursor"]
        if cursor is None:
            break

    # Then the board appears once, as GET shows it
    assert found == [send("GET", board_url(stack_url, board)).json()]


# -- validation ---------------------------------------------------------------------------


def test_malformed_json_is_400(stack_url: str) -> None:
    # Given a board id
    board = unique_id("malformed")

    # When a body that is not JSON is sent
    response = send("PUT", board_url(stack_url, board), '{"order": "desc",')

    # Then it is 400 saying that the JSON is malformed, and no board was created
    assert_error(response, 400, "ValidationError", "JSON")
    assert send("GET", board_url(stack_url, board)).status_code == 404


def test_a_body_that_is_not_an_object_is_400(stack_url: str) -> None:
    # Given a board id
    board = unique_id("array-body")

    # When a JSON array is sent as the board
    response = send("PUT", board_url(stack_url, board), "[1, 2]")

    # Then it is 400
    assert_error(response, 400, "ValidationError", "object")


def test_unknown_board_field_is_400_naming_it(stack_url: str) -> None:
    # Given a board id
    board = unique_id("unknown-field")

    # When a board is created with a field the API does not know
    response = send("PUT", board_url(stack_url, board), json={"order": "desc", "colour": "blue"})

    # Then it is 400 naming the field, and no board was created
    assert_error(response, 400, "ValidationError", "colour")
    assert send("GET", board_url(stack_url, board)).status_code == 404


def test_unknown_member_field_is_400_naming_it(stack_url: str) -> None:
    # Given a board
    board = create_board(stack_url, "unknown-member-field")

    # When a member is added with a field the API does not know
    response = send("PUT", member_url(stack_url, board, "m1"), json={"score": 1, "rank": 3})

    # Then it is 400 naming the field
    assert_error(response, 400, "ValidationError", "rank")
    assert get_member(stack_url, board, "m1").status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"shards": 0}, "shards"),
        ({"shards": 101}, "shards"),
        ({"shards": "3"}, "shards"),
        ({"order": "up"}, "order"),
        ({"operator": "max"}, "operator"),
        ({"tieBreak": "random"}, "tieBreak"),
        ({"title": "x" * 201}, "title"),
    ],
)
def test_bad_board_settings_are_400_naming_the_field(
    stack_url: str, body: dict[str, Any], field: str
) -> None:
    # Given a board id
    board = unique_id("bad-settings")

    # When a board is created with an invalid setting
    response = send("PUT", board_url(stack_url, board), json=body)

    # Then it is 400 naming the field, and no board was created
    assert_error(response, 400, "ValidationError", field)
    assert send("GET", board_url(stack_url, board)).status_code == 404


@pytest.mark.parametrize("board", ["-bad", "a" * 129, "bad!id"])
def test_bad_board_id_is_400(stack_url: str, board: str) -> None:
    # Given a board id outside ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$
    # When a board is created with it
    response = send("PUT", board_url(stack_url, board), "{}")

    # Then it is 400 naming boardId
    assert_error(response, 400, "ValidationError", "boardId")


def test_a_128_character_board_id_is_accepted(stack_url: str) -> None:
    # Given a board id of exactly the longest allowed length
    board = unique_id("long")
    board = board + "x" * (128 - len(board))

    # When a board is created with it
    response = send("PUT", board_url(stack_url, board), "{}")

    # Then it is created
    assert response.status_code == 201, response.text
    assert response.json()["boardId"] == board


@pytest.mark.parametrize("member", ["-bad", "m" * 201, "bad!member"])
def test_bad_member_id_is_400(stack_url: str, member: str) -> None:
    # Given a board
    board = create_board(stack_url, "bad-member")

    # When a member is added with an id outside the allowed pattern
    response = send("PUT", member_url(stack_url, board, member), "{}")

    # Then it is 400 naming memberId
    assert_error(response, 400, "ValidationError", "memberId")


@pytest.mark.parametrize(
    "score",
    [
        '"12"',
        "true",
        "null",
        "NaN",
        "Infinity",
        "1e30",
        "-1e30",
        "0.123456789012345678901234567890123456789",
    ],
    ids=["string", "true", "null", "NaN", "Infinity", "1e30", "minus-1e30", "39-digits"],
)
def test_bad_member_score_is_400_and_creates_nothing(stack_url: str, score: str) -> None:
    # Given a board
    board = create_board(stack_url, "bad-score")

    # When a member is added with a score that is not a valid score
    response = send("PUT", member_url(stack_url, board, "m1"), f'{{"score": {score}}}')

    # Then it is 400 (naming the field, or the non-JSON literal), and the member does not exist
    literal = score if score in ("NaN", "Infinity") else "score"
    assert_error(response, 400, "ValidationError", "score", literal)
    assert_error(get_member(stack_url, board, "m1"), 404, "NotFound")


@pytest.mark.parametrize(
    "value",
    ['"5"', "true", "null", "NaN", "1e30", "1234567890123456789.01234567890123456789"],
    ids=["string", "true", "null", "NaN", "1e30", "39-digits"],
)
def test_bad_score_submission_is_400_and_changes_nothing(stack_url: str, value: str) -> None:
    # Given a member with a score
    board = create_board(stack_url, "bad-value")
    add_member(stack_url, board, "m1", 5)

    # When an invalid value is submitted
    response = submit(stack_url, board, "m1", value)

    # Then it is 400 naming the field, and the score is unchanged
    literal = value if value == "NaN" else "value"
    assert_error(response, 400, "ValidationError", "value", literal)
    assert score_of(stack_url, board, "m1") == 5


def test_score_submission_without_value_is_400(stack_url: str) -> None:
    # Given a member
    board = create_board(stack_url, "no-value")
    add_member(stack_url, board, "m1", 5)

    # When a score is submitted with an empty object
    response = send("POST", f"{member_url(stack_url, board, 'm1')}/score", "{}")

    # Then it is 400 naming the field
    assert_error(response, 400, "ValidationError", "value")
    assert score_of(stack_url, board, "m1") == 5


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("top", {"limit": "0"}, "limit"),
        ("top", {"limit": "1001"}, "limit"),
        ("top", {"limit": "ten"}, "limit"),
        ("top", {"withData": "maybe"}, "withData"),
        ("top", {"cursor": "not-a-cursor!!"}, "cursor"),
        ("top", {"cursor": "eyJiIjogMX0"}, "cursor"),
        ("members/m1/around", {"radius": "51"}, "radius"),
        ("members/m1/around", {"radius": "-1"}, "radius"),
    ],
)
def test_bad_query_parameters_are_400_naming_them(
    stack_url: str, path: str, params: dict[str, str], field: str
) -> None:
    # Given a board with a member
    board = create_board(stack_url, "bad-query")
    add_member(stack_url, board, "m1", 1)

    # When a ranking is read with a bad query parameter
    response = send("GET", f"{board_url(stack_url, board)}/{path}", params=params)

    # Then it is 400 naming the parameter
    assert_error(response, 400, "ValidationError", field)


@pytest.mark.parametrize(
    ("params", "field"),
    [({"limit": "0"}, "limit"), ({"limit": "abc"}, "limit"), ({"cursor": "%%% not a cursor"}, "cursor")],
)
def test_bad_list_boards_parameters_are_400(stack_url: str, params: dict[str, str], field: str) -> None:
    # Given the board list
    # When it is read with a bad query parameter
    response = send("GET", f"{stack_url}/boards", params=params)

    # Then it is 400 naming the parameter
    assert_error(response, 400, "ValidationError", field)


def test_a_cursor_of_another_board_is_400(stack_url: str) -> None:
    # Given two boards, and a cursor of the first
    first = create_board(stack_url, "cursor-a")
    second = create_board(stack_url, "cursor-b")
    for member in ("a", "b"):
        add_member(stack_url, first, member, 1)
        add_member(stack_url, second, member, 1)
    cursor = top(stack_url, first, limit=1, consistent="true").json()["nextCursor"]
    assert cursor

    # When that cursor is used on the second board
    response = top(stack_url, second, limit=1, cursor=cursor)

    # Then it is 400 about the cursor
    assert_error(response, 400, "ValidationError", "cursor")


def test_a_cursor_without_its_signature_is_400_and_the_signed_one_pages_on(stack_url: str) -> None:
    # Given a cursor the local stack signed with its own key (CURSOR_KEY: no Secrets Manager here)
    board = create_board(stack_url, "cursor-signed")
    for member in ("a", "b", "c"):
        add_member(stack_url, board, member, 1)
    cursor = top(stack_url, board, limit=1, consistent="true").json()["nextCursor"]
    payload, key_id, signature = cursor.split(".")
    assert key_id
    assert signature

    # When it is sent with its signature emptied, or dropped
    # Then each is 400 about the cursor's signature, and the cursor itself still pages on
    for unsigned in (f"{payload}.{key_id}.", f"{payload}.{key_id}"):
        assert_error(top(stack_url, board, limit=1, cursor=unsigned), 400, "ValidationError", "cursor")
    assert top(stack_url, board, limit=1, cursor=cursor).json()["entries"][0]["memberId"] == "b"


@pytest.mark.parametrize("count", [0, 101])
def test_ranks_with_0_or_101_ids_is_400(stack_url: str, count: int) -> None:
    # Given a board
    board = create_board(stack_url, "bad-ranks")

    # When the ranks of 0 or 101 members are asked for
    ids = [f"m{i}" for i in range(count)]
    response = send("POST", f"{board_url(stack_url, board)}/ranks", json={"memberIds": ids})

    # Then it is 400 naming memberIds
    assert_error(response, 400, "ValidationError", "memberIds")


def test_ranks_with_a_bad_member_id_is_400(stack_url: str) -> None:
    # Given a board
    board = create_board(stack_url, "bad-ranks-id")

    # When one of the ids is not a member id
    response = send("POST", f"{board_url(stack_url, board)}/ranks", json={"memberIds": ["ok", "-bad"]})

    # Then it is 400
    assert_error(response, 400, "ValidationError", "memberIds")


def test_member_data_over_64_kib_is_413_and_creates_nothing(stack_url: str) -> None:
    # Given a board
    board = create_board(stack_url, "big-data")

    # When a member is added with data of more than 64 KiB (but a body under 256 KiB)
    response = send("PUT", member_url(stack_url, board, "m1"), json={"data": {"blob": "x" * (65 * 1024)}})

    # Then it is 413 naming the data limit, and the member does not exist
    assert_error(response, 413, "PayloadTooLarge", "data")
    assert_error(get_member(stack_url, board, "m1"), 404, "NotFound")


def test_member_data_over_64_kib_leaves_an_existing_member_unchanged(stack_url: str) -> None:
    # Given a member with data
    board = create_board(stack_url, "big-data-existing")
    add_member(stack_url, board, "m1", 3, data={"small": True})

    # When its data is replaced with more than 64 KiB
    response = send("PUT", member_url(stack_url, board, "m1"), json={"data": {"blob": "y" * (65 * 1024)}})

    # Then it is 413 and the member keeps its data
    assert_error(response, 413, "PayloadTooLarge")
    assert get_member(stack_url, board, "m1").json()["data"] == {"small": True}


def test_a_body_over_256_kib_is_413(stack_url: str) -> None:
    # Given a board
    board = create_board(stack_url, "big-body")

    # When a member is sent with a body of more than 256 KiB
    response = send("PUT", member_url(stack_url, board, "m1"), json={"data": {"blob": "z" * (300 * 1024)}})

    # Then it is 413 and the member does not exist
    assert_error(response, 413, "PayloadTooLarge", "256")
    assert_error(get_member(stack_url, board, "m1"), 404, "NotFound")


# -- errors -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/nowhere"), ("GET", "/boards/b1/members"), ("PATCH", "/boards/b1"), ("POST", "/boards")],
)
def test_an_unknown_route_is_404_with_a_json_error(stack_url: str, method: str, path: str) -> None:
    # Given a path the API does not have
    # When it is requested
    response = send(method, f"{stack_url}{path}")

    # Then it is 404 with the error shape
    assert_error(response, 404, "NotFound")


# -- members ------------------------------------------------------------------------------


def test_put_member_creates_201_then_200(stack_url: str) -> None:
    # Given a board
    board = create_board(stack_url, "members")

    # When a member is PUT twice
    first = send("PUT", member_url(stack_url, board, "user-1"), json={"data": {"name": "Ana"}})
    second = send("PUT", member_url(stack_url, board, "user-1"), json={"data": {"name": "Ana B."}})

    # Then it is created (201, score 0 by default) and then replaced (200)
    assert first.status_code == 201, first.text
    created = first.json()
    assert set(created) == MEMBER_FIELDS
    assert (created["boardId"], created["memberId"], created["score"], created["data"]) == (
        board,
        "user-1",
        0,
        {"name": "Ana"},
    )
    assert created["hidden"] is False  # nobody is hidden unless an admin hides it
    assert ISO_UTC.match(created["createdAt"])
    assert ISO_UTC.match(created["updatedAt"])
    assert second.status_code == 200, second.text
    replaced = second.json()
    assert replaced["data"] == {"name": "Ana B."}
    assert replaced["createdAt"] == created["createdAt"]
    assert replaced["updatedAt"] >= created["updatedAt"]


def test_get_member_returns_the_representation(stack_url: str) -> None:
    # Given a member with a score and data
    board = create_board(stack_url, "get-member")
    put = add_member(stack_url, board, "img-006.jpg", 94, data={"owner": "ana", "tags": ["sea", 1]})

    # When it is read
    response = get_member(stack_url, board, "img-006.jpg")

    # Then it is the member
    assert response.status_code == 200
    body = response.json()
    assert set(body) == MEMBER_FIELDS
    assert body["boardId"] == board
    assert body["memberId"] == "img-006.jpg"
    assert body["score"] == 94
    assert body["data"] == {"owner": "ana", "tags": ["sea", 1]}
    assert body["hidden"] is False
    assert body["createdAt"] == put.json()["createdAt"]
    assert ISO_UTC.match(body["updatedAt"])


def test_member_ids_with_every_allowed_character(stack_url: str) -> None:
    # Given a board
    board = create_board(stack_url, "member-chars")
    member = "user.1_a:b@example.com~x-9"

    # When a member whose id uses every allowed punctuation character is added and read
    created = send("PUT", member_url(stack_url, board, member), json={"score": 1})
    response = get_member(stack_url, board, member)

    # Then it is the same member
    assert created.status_code == 201, created.text
    assert response.status_code == 200
    assert response.json()["memberId"] == member


def test_data_is_kept_when_left_out_and_cleared_by_an_empty_object(stack_url: str) -> None:
    # Given a member with data
    board = create_board(stack_url, "data")
    add_member(stack_url, board, "m1", 1, data={"name": "Ana"})

    # When it is PUT with only a score
    kept = send("PUT", member_url(stack_url, board, "m1"), json={"score": 2})

    # Then the data is kept
    assert kept.status_code == 200
    assert kept.json()["data"] == {"name": "Ana"}
    assert get_member(stack_url, board, "m1").json()["data"] == {"name": "Ana"}

    # When it is PUT with "data": {}
    cleared = send("PUT", member_url(stack_url, board, "m1"), json={"data": {}})

    # Then the data is cleared, and the score is kept
    assert cleared.status_code == 200
    body = get_member(stack_url, board, "m1").json()
    assert body["data"] == {}
    assert body["score"] == 2


def test_a_new_member_without_score_starts_at_0_and_is_ranked(stack_url: str) -> None:
    # Given a board
    board = create_board(stack_url, "zero")

    # When a member is added without a score
    response = send("PUT", member_url(stack_url, board, "m1"), "{}")

    # Then its score is 0 and it appears on the board
    assert response.status_code == 201
    assert response.json()["score"] == 0
    assert response.json()["data"] == {}
    assert listing(stack_url, board) == [(1, "m1", 0)]


@pytest.mark.parametrize("operator", ["increment", "best", "set"])
def test_put_member_score_replaces_the_score_whatever_the_operator(stack_url: str, operator: str) -> None:
    # Given a member with a score of 50 on a board with that operator
    board = create_board(stack_url, "replace", operator=operator)
    add_member(stack_url, board, "m1", 50, data={"keep": 1})

    # When an administrator PUTs a lower score
    response = send("PUT", member_url(stack_url, board, "m1"), json={"score": 10})

    # Then the score is replaced (not added, not kept as the best), also in the rankings
    assert response.status_code == 200
    assert response.json()["score"] == 10
    assert response.json()["data"] == {"keep": 1}
    assert score_of(stack_url, board, "m1") == 10
    assert listing(stack_url, board) == [(1, "m1", 10)]


def test_delete_member_is_204_twice_and_the_member_leaves_the_rankings(stack_url: str) -> None:
    # Given two members
    board = create_board(stack_url, "delete")
    add_member(stack_url, board, "gone", 100)
    add_member(stack_url, board, "stays", 50)

    # When one is deleted, twice
    first = send("DELETE", member_url(stack_url, board, "gone"))
    second = send("DELETE", member_url(stack_url, board, "gone"))

    # Then both deletes are 204, and the member is nowhere
    assert first.status_code == 204
    assert second.status_code == 204
    assert_error(get_member(stack_url, board, "gone"), 404, "NotFound")
    assert_error(send("GET", f"{member_url(stack_url, board, 'gone')}/rank"), 404, "NotFound")
    assert_error(send("GET", f"{member_url(stack_url, board, 'gone')}/around"), 404, "NotFound")
    assert listing(stack_url, board) == [(1, "stays", 50)]
    ranks = send("POST", f"{board_url(stack_url, board)}/ranks", json={"memberIds": ["gone", "stays"]})
    assert [e["memberId"] for e in ranks.json()["entries"]] == ["stays"]
    assert send("GET", f"{member_url(stack_url, board, 'stays')}/rank").json()["rank"] == 1


def test_delete_a_member_that_never_existed_is_204(stack_url: str) -> None:
    # Given a board
    board = create_board(stack_url, "delete-none")

    # When a member that was never there is deleted
    response = send("DELETE", member_url(stack_url, board, "nobody"))

    # Then it is 204
    assert response.status_code == 204


def test_delete_on_a_missing_board_is_404(stack_url: str) -> None:
    # Given a board that does not exist
    board = unique_id("no-board")

    # When a member of it is deleted
    response = send("DELETE", member_url(stack_url, board, "m1"))

    # Then it is 404
    assert_error(response, 404, "NotFound", board)


def test_put_member_on_a_missing_board_is_404(stack_url: str) -> None:
    # Given a board that does not exist
    board = unique_id("no-board")

    # When a member is added to it
    response = send("PUT", member_url(stack_url, board, "m1"), json={"score": 1})

    # Then it is 404, and no board was created
    assert_error(response, 404, "NotFound", board)
    assert send("GET", board_url(stack_url, board)).status_code == 404


def test_get_member_missing_member_or_board_is_404(stack_url: str) -> None:
    # Given a board without members
    board = create_board(stack_url, "get-missing")

    # When a missing member, and a member of a missing board, are read
    missing_member = get_member(stack_url, board, "nobody")
    missing_board = get_member(stack_url, unique_id("no-board"), "m1")

    # Then both are 404
    assert_error(missing_member, 404, "NotFound", "nobody")
    assert_error(missing_board, 404, "NotFound")


def test_a_member_added_again_after_deletion_starts_afresh(stack_url: str) -> None:
    # Given a member with a score and data, which is then deleted
    board = create_board(stack_url, "afresh")
    add_member(stack_url, board, "m1", 40, data={"old": True})
    submit(stack_url, board, "m1", 2)
    assert send("DELETE", member_url(stack_url, board, "m1")).status_code == 204

    # When it is added again without a score
    again = send("PUT", member_url(stack_url, board, "m1"), json={"data": {"new": True}})

    # Then it is created afresh: 201, score 0, only the new data
    assert again.status_code == 201, again.text
    body = get_member(stack_url, board, "m1").json()
    assert (body["score"], body["data"]) == (0, {"new": True})
    assert listing(stack_url, board) == [(1, "m1", 0)]

    # And a member added again with a score starts from that score
    add_member(stack_url, board, "m2", 7, data={"x": 1})
    assert send("DELETE", member_url(stack_url, board, "m2")).status_code == 204
    readded = send("PUT", member_url(stack_url, board, "m2"), json={"score": 3})
    assert readded.status_code == 201
    body = get_member(stack_url, board, "m2").json()
    assert (body["score"], body["data"]) == (3, {})


def test_member_count_follows_adds_and_deletes(stack_url: str) -> None:
    # Given a board with three members
    board = create_board(stack_url, "count")
    for member in ("a", "b", "c"):
        add_member(stack_url, board, member, 1)
    wait_for_member_count(stack_url, board, 3)

    # When one is deleted (twice) and another is only updated
    send("DELETE", member_url(stack_url, board, "b"))
    send("DELETE", member_url(stack_url, board, "b"))
    submit(stack_url, board, "a", 5)

    # Then memberCount goes back down to 2, and top's total agrees
    wait_for_member_count(stack_url, board, 2)
    assert top(stack_url, board).json()["total"] == 2


# -- scores -------------------------------------------------------------------------------


def test_score_for_a_missing_member_is_404_and_creates_no_member(stack_url: str) -> None:
    # Given a board without that member
    board = create_board(stack_url, "score-missing")

    # When a score is submitted for it
    response = submit(stack_url, board, "ghost", 10)

    # Then it is 404, and no member was created
    assert_error(response, 404, "NotFound", "ghost")
    assert_error(get_member(stack_url, board, "ghost"), 404, "NotFound")
    assert listing(stack_url, board) == []


def test_score_on_a_missing_board_is_404(stack_url: str) -> None:
    # Given a board that does not exist
    board = unique_id("no-board")

    # When a score is submitted on it
    response = submit(stack_url, board, "m1", 1)

    # Then it is 404
    assert_error(response, 404, "NotFound", board)


def test_increment_adds_and_answers_with_the_previous_score(stack_url: str) -> None:
    # Given the running event: user-1 ran 71.1 km
    board = create_board(stack_url, "increment")
    add_member(stack_url, board, "user-1", "71.1")

    # When they track another 11.2 km
    response = submit(stack_url, board, "user-1", "11.2")

    # Then the answer is the new and the previous score
    assert response.status_code == 200, response.text
    body = decimal_json(response)
    assert body == {"memberId": "user-1", "score": Decimal("82.3"), "previousScore": Decimal("71.1")}
    assert score_of(stack_url, board, "user-1") == Decimal("82.3")


def test_increment_sums_decimals_exactly(stack_url: str) -> None:
    # Given a member at 0
    board = create_board(stack_url, "exact")
    add_member(stack_url, board, "m1")

    # When 0.1 and then 0.2 are added
    submit(stack_url, board, "m1", "0.1")
    response = submit(stack_url, board, "m1", "0.2")

    # Then the score is exactly 0.3 (not 0.30000000000000004), everywhere it is shown
    assert decimal_json(response)["score"] == Decimal("0.3")
    assert '"score":0.3' in response.text.replace(" ", "")
    assert score_of(stack_url, board, "m1") == Decimal("0.3")
    assert listing(stack_url, board) == [(1, "m1", Decimal("0.3"))]
    rank = decimal_json(send("GET", f"{member_url(stack_url, board, 'm1')}/rank"))
    assert rank["score"] == Decimal("0.3")


def test_increment_keeps_38_significant_digits(stack_url: str) -> None:
    # Given a member with a score of 38 significant digits
    board = create_board(stack_url, "digits")
    add_member(stack_url, board, "m1", "12345678901234567890.123456789012345678")

    # When a small value is added that keeps it within 38 digits
    response = submit(stack_url, board, "m1", "0.000000000000000001")

    # Then no digit is lost
    assert response.status_code == 200, response.text
    expected = Decimal("12345678901234567890.123456789012345679")
    assert decimal_json(response)["score"] == expected
    assert score_of(stack_url, board, "m1") == expected


def test_negative_increments(stack_url: str) -> None:
    # Given a member at 10
    board = create_board(stack_url, "negative")
    add_member(stack_url, board, "m1", 10)

    # When -12.5 is added
    response = submit(stack_url, board, "m1", "-12.5")

    # Then the score is -2.5, and it ranks below a member at 0
    assert response.status_code == 200, response.text
    assert decimal_json(response)["score"] == Decimal("-2.5")
    add_member(stack_url, board, "m0")
    assert listing(stack_url, board) == [(1, "m0", 0), (2, "m1", Decimal("-2.5"))]


def test_best_on_a_desc_board_keeps_the_higher(stack_url: str) -> None:
    # Given a member at 50 on a best/desc board
    board = create_board(stack_url, "best-desc", operator="best")
    add_member(stack_url, board, "m1", 50)

    # When a lower and then a higher score are submitted
    lower = submit(stack_url, board, "m1", 40)
    higher = submit(stack_url, board, "m1", "60.5")

    # Then the lower is ignored and the higher is kept
    assert decimal_json(lower) == {"memberId": "m1", "score": 50, "previousScore": 50}
    assert decimal_json(higher) == {"memberId": "m1", "score": Decimal("60.5"), "previousScore": 50}
    assert score_of(stack_url, board, "m1") == Decimal("60.5")


def test_best_on_an_asc_board_keeps_the_lower(stack_url: str) -> None:
    # Given a lap time of 62.5 s on a best/asc board
    board = create_board(stack_url, "best-asc", operator="best", order="asc")
    add_member(stack_url, board, "driver", "62.5")

    # When a slower and then a faster lap are submitted
    slower = submit(stack_url, board, "driver", "63.1")
    faster = submit(stack_url, board, "driver", "61.75")

    # Then the slower is ignored and the faster is kept
    assert decimal_json(slower)["score"] == Decimal("62.5")
    assert decimal_json(faster) == {
        "memberId": "driver",
        "score": Decimal("61.75"),
        "previousScore": Decimal("62.5"),
    }
    assert score_of(stack_url, board, "driver") == Decimal("61.75")


def test_set_replaces_the_score(stack_url: str) -> None:
    # Given a member at 50 on a set board
    board = create_board(stack_url, "set", operator="set")
    add_member(stack_url, board, "m1", 50)

    # When 7 and then 8.25 are submitted
    first = submit(stack_url, board, "m1", 7)
    second = submit(stack_url, board, "m1", "8.25")

    # Then each replaces the score
    assert decimal_json(first) == {"memberId": "m1", "score": 7, "previousScore": 50}
    assert decimal_json(second) == {"memberId": "m1", "score": Decimal("8.25"), "previousScore": 7}
    assert score_of(stack_url, board, "m1") == Decimal("8.25")


def test_integral_scores_are_written_without_a_fraction(stack_url: str) -> None:
    # Given a member at 41.5
    board = create_board(stack_url, "integral")
    add_member(stack_url, board, "m1", "41.5")

    # When 0.5 is added (an integral result of decimals)
    response = submit(stack_url, board, "m1", "0.5")

    # Then 42 is written as 42, never 42.0, in every answer that shows it
    texts = [
        response.text,
        get_member(stack_url, board, "m1").text,
        top(stack_url, board, consistent="true").text,
        send("GET", f"{member_url(stack_url, board, 'm1')}/rank").text,
        send("GET", f"{member_url(stack_url, board, 'm1')}/around").text,
        send("POST", f"{board_url(stack_url, board)}/ranks", json={"memberIds": ["m1"]}).text,
    ]
    for text in texts:
        compact = text.replace(" ", "")
        assert re.findall(r'"score":([^,}\]]+)', compact) == ["42"], text
    assert re.search(r'"previousScore":41\.5[,}]', response.text.replace(" ", ""))


def test_exponent_and_trailing_zero_scores_come_back_as_plain_numbers(stack_url: str) -> None:
    # Given a set board
    board = create_board(stack_url, "plain", operator="set")
    add_member(stack_url, board, "m1", "82.30")
    add_member(stack_url, board, "m2")

    # When a score is given as 82.30, and another as 1e2
    stored = get_member(stack_url, board, "m1")
    response = submit(stack_url, board, "m2", "1e2")

    # Then 82.30 comes back equal to 82.3, and 1e2 as the integer 100
    assert decimal_json(stored)["score"] == Decimal("82.3")
    assert response.status_code == 200, response.text
    assert re.search(r'"score":100[,}]', response.text.replace(" ", "")), response.text
    assert re.search(r'"score":100[,}]', get_member(stack_url, board, "m2").text.replace(" ", ""))


@pytest.mark.parametrize("near", ["999999999999999999999999999999", "-999999999999999999999999999999.5"])
def test_a_score_just_inside_1e30_is_accepted(stack_url: str, near: str) -> None:
    # Given a board
    board = create_board(stack_url, "near-bound")

    # When a member is added with a score whose magnitude is just under 1e30
    response = send("PUT", member_url(stack_url, board, "m1"), f'{{"score": {near}}}')

    # Then it is accepted and kept exactly (abs(score) < 1e30 is a valid score)
    assert response.status_code == 201, response.text
    assert score_of(stack_url, board, "m1") == Decimal(near)


@pytest.mark.parametrize(("start", "value"), [("999999999999999999999999999000", "1000"), ("-9e29", "-1e29")])
def test_a_result_beyond_the_bounds_is_400_and_changes_nothing(
    stack_url: str, start: str, value: str
) -> None:
    # Given a member near 1e30 in magnitude
    board = create_board(stack_url, "bounds")
    add_member(stack_url, board, "m1", start)

    # When a value is added that would make abs(score) reach 1e30
    response = submit(stack_url, board, "m1", value)

    # Then it is 400, and the score is unchanged, also in the rankings
    assert_error(response, 400, "ValidationError", "1e30")
    assert score_of(stack_url, board, "m1") == Decimal(start)
    assert listing(stack_url, board) == [(1, "m1", Decimal(start))]


def test_a_result_with_more_than_38_digits_is_400_and_changes_nothing(stack_url: str) -> None:
    # Given a member with a 38-digit score
    board = create_board(stack_url, "too-many-digits")
    start = "12345678901234567890.123456789012345678"
    add_member(stack_url, board, "m1", start)

    # When a value is added whose sum needs 39 digits
    response = submit(stack_url, board, "m1", "0.0000000000000000001")

    # Then it is 400, and the score is unchanged
    assert_error(response, 400, "ValidationError", "38")
    assert score_of(stack_url, board, "m1") == Decimal(start)


# -- Idempotency-Key ----------------------------------------------------------------------


def test_the_same_idempotency_key_and_body_is_applied_once(stack_url: str) -> None:
    # Given a member at 10
    board = create_board(stack_url, "idem")
    add_member(stack_url, board, "m1", 10)
    key = {"Idempotency-Key": unique_id("key")}

    # When the same submission is sent twice with the same key
    first = submit(stack_url, board, "m1", 5, headers=key)
    second = submit(stack_url, board, "m1", 5, headers=key)

    # Then it is applied once, and both answers are the first one
    assert first.status_code == 200, first.text
    assert second.status_code == 200, second.text
    assert decimal_json(first) == {"memberId": "m1", "score": 15, "previousScore": 10}
    assert decimal_json(second) == decimal_json(first)
    assert score_of(stack_url, board, "m1") == 15

    # And a submission without a key is applied as usual
    assert decimal_json(submit(stack_url, board, "m1", 5))["score"] == 20


def test_the_same_idempotency_key_with_another_body_is_400(stack_url: str) -> None:
    # Given a submission applied with a key
    board = create_board(stack_url, "idem-body")
    add_member(stack_url, board, "m1", 10)
    key = {"Idempotency-Key": unique_id("key")}
    assert submit(stack_url, board, "m1", 5, headers=key).status_code == 200

    # When the same key is sent with another value
    response = submit(stack_url, board, "m1", 6, headers=key)

    # Then it is 400, and nothing more was applied
    assert_error(response, 400, "ValidationError", "Idempotency-Key")
    assert score_of(stack_url, board, "m1") == 15


def test_an_idempotency_key_belongs_to_one_members_route(stack_url: str) -> None:
    # Given a submission applied to one member with a key
    board = create_board(stack_url, "idem-scope")
    add_member(stack_url, board, "m1", 10)
    add_member(stack_url, board, "m2", 100)
    key = {"Idempotency-Key": unique_id("key")}
    assert submit(stack_url, board, "m1", 5, headers=key).status_code == 200

    # When the same key and body are sent for another member
    response = submit(stack_url, board, "m2", 5, headers=key)

    # Then it is applied to that member, independently
    assert response.status_code == 200, response.text
    assert decimal_json(response) == {"memberId": "m2", "score": 105, "previousScore": 100}
    assert score_of(stack_url, board, "m1") == 15
    assert score_of(stack_url, board, "m2") == 105


def test_an_idempotency_key_on_a_missing_member_does_not_create_it(stack_url: str) -> None:
    # Given a board without that member
    board = create_board(stack_url, "idem-missing")

    # When a keyed submission is sent for it
    response = submit(stack_url, board, "ghost", 5, headers={"Idempotency-Key": unique_id("key")})

    # Then it is 404 and no member exists
    assert_error(response, 404, "NotFound")
    assert get_member(stack_url, board, "ghost").status_code == 404


# -- rankings -----------------------------------------------------------------------------


def test_images_top_three(stack_url: str) -> None:
    # Given the six images on a board with 3 shards
    board = images_board(stack_url)

    # When the top 3 is read
    response = top(stack_url, board, limit=3, consistent="true")

    # Then it is 006, 004, 005 with ranks 1, 2, 3, and there is more
    assert response.status_code == 200, response.text
    body = decimal_json(response)
    assert body["boardId"] == board
    assert [(e["rank"], e["memberId"], e["score"]) for e in body["entries"]] == [
        (1, "img-006.jpg", 94),
        (2, "img-004.jpg", 83),
        (3, "img-005.jpg", 52),
    ]
    assert all(set(e) == {"rank", "memberId", "score"} for e in body["entries"])
    assert isinstance(body["nextCursor"], str)
    assert body["nextCursor"]

    # And total is the six members, once the count has caught up
    def total_is_six() -> None:
        assert top(stack_url, board, limit=3).json()["total"] == 6

    eventually(total_is_six)
    assert send("GET", board_url(stack_url, board)).json()["memberCount"] == 6


def test_images_pages_follow_the_cursor(stack_url: str) -> None:
    # Given the six images
    board = images_board(stack_url)

    # When the listing is read two at a time, following nextCursor
    pages: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(10):
        params: dict[str, Any] = {"limit": 2}
        if cursor is None:
            params["consistent"] = "true"
        else:
            params["cursor"] = cursor
        response = top(stack_url, board, **params)
        assert response.status_code == 200, response.text
        pages.append(response.json())
        cursor = pages[-1]["nextCursor"]
        if cursor is None:
            break

    # Then the pages list all six exactly once, in order, with their ranks, and end with null
    entries = [e for page in pages for e in page["entries"]]
    assert [e["memberId"] for e in entries] == IMAGES_IN_ORDER
    assert [e["rank"] for e in entries] == [1, 2, 3, 4, 5, 6]
    assert [e["score"] for e in entries] == [IMAGES[m] for m in IMAGES_IN_ORDER]
    assert all(len(page["entries"]) <= 2 for page in pages)
    assert pages[-1]["nextCursor"] is None
    assert all(page["nextCursor"] for page in pages[:-1])


def test_images_cursor_continues_with_another_limit(stack_url: str) -> None:
    # Given the first page of 3 of the six images
    board = images_board(stack_url)
    first = top(stack_url, board, limit=3, consistent="true").json()

    # When the rest is read after its cursor with a larger limit
    rest = top(stack_url, board, limit=10, cursor=first["nextCursor"]).json()

    # Then it is the other three, ranked 4..6, and nothing more
    assert [(e["rank"], e["memberId"]) for e in rest["entries"]] == [
        (4, "img-001.jpg"),
        (5, "img-002.jpg"),
        (6, "img-003.jpg"),
    ]
    assert rest["nextCursor"] is None


def test_images_top_with_data(stack_url: str) -> None:
    # Given the six images, each with data
    board = images_board(stack_url)

    # When the top is read with withData=true, and without it
    with_data = top(stack_url, board, limit=6, withData="true", consistent="true").json()
    without = top(stack_url, board, limit=6, withData="false", consistent="true").json()

    # Then each entry carries its member's data only when asked for
    assert [(e["memberId"], e["data"]) for e in with_data["entries"]] == [
        (m, {"owner": f"owner-of-{m}"}) for m in IMAGES_IN_ORDER
    ]
    assert all("data" not in e for e in without["entries"])
    assert with_data["nextCursor"] is None


def test_images_rank(stack_url: str) -> None:
    # Given the six images
    board = images_board(stack_url)
    wait_for_member_count(stack_url, board, 6)

    # When the rank of img-001.jpg is read
    response = send("GET", f"{member_url(stack_url, board, 'img-001.jpg')}/rank")

    # Then it is 4th of 6
    assert response.status_code == 200, response.text
    assert response.json() == {
        "memberId": "img-001.jpg",
        "score": 27,
        "rank": 4,
        "total": 6,
        "topPercent": 66.67,
    }


def test_rank_of_a_missing_member_is_404(stack_url: str) -> None:
    # Given a board without that member
    board = create_board(stack_url, "rank-missing")

    # When its rank is read
    response = send("GET", f"{member_url(stack_url, board, 'nobody')}/rank")

    # Then it is 404
    assert_error(response, 404, "NotFound", "nobody")


@pytest.mark.parametrize(
    ("member", "radius", "expected"),
    [
        ("img-006.jpg", 2, IMAGES_IN_ORDER[0:5]),  # at the top: the window shifts down
        ("img-003.jpg", 2, IMAGES_IN_ORDER[1:6]),  # at the bottom: the window shifts up
        ("img-005.jpg", 1, IMAGES_IN_ORDER[1:4]),  # in the middle: centred
        ("img-001.jpg", 0, ["img-001.jpg"]),  # radius 0: the member alone
        ("img-005.jpg", 50, IMAGES_IN_ORDER),  # more than the board: all of it
    ],
)
def test_images_around(stack_url: str, member: str, radius: int, expected: list[str]) -> None:
    # Given the six images
    board = images_board(stack_url)
    wait_for_member_count(stack_url, board, 6)

    # When the window around a member is read
    response = send("GET", f"{member_url(stack_url, board, member)}/around", params={"radius": radius})

    # Then it holds the expected consecutive entries, each with its board-wide rank
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["boardId"] == board
    assert body["total"] == 6
    assert [e["memberId"] for e in body["entries"]] == expected
    assert [e["rank"] for e in body["entries"]] == [IMAGES_IN_ORDER.index(m) + 1 for m in expected]
    assert [e["score"] for e in body["entries"]] == [IMAGES[m] for m in expected]


def test_around_defaults_to_radius_5(stack_url: str) -> None:
    # Given a board of 15 members scored 15 down to 1
    board = create_board(stack_url, "around-default")
    for i in range(1, 16):
        add_member(stack_url, board, f"m{i:02d}", 16 - i)

    # When the window around the 2nd is read without a radius
    response = send("GET", f"{member_url(stack_url, board, 'm02')}/around")

    # Then it is ranks 1..11 (2·5+1 entries, shifted at the top)
    assert response.status_code == 200, response.text
    assert [e["rank"] for e in response.json()["entries"]] == list(range(1, 12))


def test_around_a_missing_member_is_404(stack_url: str) -> None:
    # Given a board without that member
    board = create_board(stack_url, "around-missing")

    # When the window around it is read
    response = send("GET", f"{member_url(stack_url, board, 'nobody')}/around")

    # Then it is 404
    assert_error(response, 404, "NotFound", "nobody")


def test_images_ranks_of_several_members(stack_url: str) -> None:
    # Given the six images
    board = images_board(stack_url)

    # When the ranks of some of them, an unknown id and a duplicate are asked for
    response = send(
        "POST",
        f"{board_url(stack_url, board)}/ranks",
        json={"memberIds": ["img-003.jpg", "img-006.jpg", "nope", "img-006.jpg"]},
    )

    # Then the existing ones come once each, in listing order, with their board-wide ranks
    assert response.status_code == 200, response.text
    assert response.json() == {
        "entries": [
            {"rank": 1, "memberId": "img-006.jpg", "score": 94},
            {"rank": 6, "memberId": "img-003.jpg", "score": 16},
        ]
    }


def test_ranks_of_only_unknown_members_is_empty(stack_url: str) -> None:
    # Given a board with one member
    board = create_board(stack_url, "ranks-unknown")
    add_member(stack_url, board, "m1", 1)

    # When only unknown ids are asked for
    response = send("POST", f"{board_url(stack_url, board)}/ranks", json={"memberIds": ["x", "y"]})

    # Then there are no entries
    assert response.status_code == 200, response.text
    assert response.json() == {"entries": []}


def test_ranks_on_a_missing_board_is_404(stack_url: str) -> None:
    # Given a board that does not exist
    board = unique_id("no-board")

    # When ranks are asked for on it
    response = send("POST", f"{board_url(stack_url, board)}/ranks", json={"memberIds": ["m1"]})

    # Then it is 404
    assert_error(response, 404, "NotFound", board)


def test_top_of_a_missing_board_is_404(stack_url: str) -> None:
    # Given a board that does not exist
    board = unique_id("no-board")

    # When its top is read
    response = top(stack_url, board)

    # Then it is 404
    assert_error(response, 404, "NotFound", board)


def test_top_of_an_empty_board(stack_url: str) -> None:
    # Given a board without members
    board = create_board(stack_url, "empty")

    # When its top is read
    response = top(stack_url, board)

    # Then there are no entries and nothing more
    assert response.status_code == 200, response.text
    assert response.json() == {"boardId": board, "entries": [], "total": 0, "nextCursor": None}


def test_shared_ties_rank_1224_and_list_by_member_id(stack_url: str) -> None:
    # Given c, a, b at 10 and d at 20 on a desc board with shared ranks
    board = create_board(stack_url, "ties", shards=3)
    for member in ("c", "a", "b"):
        add_member(stack_url, board, member, 10)
    add_member(stack_url, board, "d", 20)

    # When the listing, the ranks and a window are read
    entries = listing(stack_url, board)
    rank_of_b = send("GET", f"{member_url(stack_url, board, 'b')}/rank").json()
    around_c = send("GET", f"{member_url(stack_url, board, 'c')}/around", params={"radius": 1}).json()
    ranks = send("POST", f"{board_url(stack_url, board)}/ranks", json={"memberIds": ["c", "d", "b"]}).json()

    # Then d is 1st and a, b, c share rank 2, listed by memberId, everywhere
    assert entries == [(1, "d", 20), (2, "a", 10), (2, "b", 10), (2, "c", 10)]
    assert rank_of_b["rank"] == 2
    assert [(e["rank"], e["memberId"]) for e in around_c["entries"]] == [(2, "a"), (2, "b"), (2, "c")]
    assert [(e["rank"], e["memberId"]) for e in ranks["entries"]] == [(1, "d"), (2, "b"), (2, "c")]


def test_around_a_window_that_starts_inside_a_tie(stack_url: str) -> None:
    # Given d at 20, then a, b, c, e tied at 10 (shared ranks)
    board = create_board(stack_url, "ties-around", shards=3)
    for member, score in (("a", 10), ("b", 10), ("c", 10), ("d", 20), ("e", 10)):
        add_member(stack_url, board, member, score)

    # When the window of radius 1 around the last member is read (it shifts up into the tie)
    response = send("GET", f"{member_url(stack_url, board, 'e')}/around", params={"radius": 1})

    # Then every entry of the window has the tie's shared rank 2
    assert response.status_code == 200, response.text
    assert [(e["rank"], e["memberId"]) for e in response.json()["entries"]] == [(2, "b"), (2, "c"), (2, "e")]


def test_shared_ties_keep_their_rank_across_pages(stack_url: str) -> None:
    # Given d at 20 and a, b, c at 10, then e at 5
    board = create_board(stack_url, "ties-pages", shards=2)
    for member, score in (("a", 10), ("b", 10), ("c", 10), ("d", 20), ("e", 5)):
        add_member(stack_url, board, member, score)

    # When the listing is read two at a time
    first = top(stack_url, board, limit=2, consistent="true").json()
    second = top(stack_url, board, limit=2, cursor=first["nextCursor"]).json()
    third = top(stack_url, board, limit=2, cursor=second["nextCursor"]).json()

    # Then a tie split across pages keeps its shared rank, and the next rank skips ("1224")
    entries = first["entries"] + second["entries"] + third["entries"]
    assert [(e["rank"], e["memberId"]) for e in entries] == [(1, "d"), (2, "a"), (2, "b"), (2, "c"), (5, "e")]
    assert third["nextCursor"] is None


def test_earliest_tie_break_ranks_who_reached_the_score_first(stack_url: str) -> None:
    # Given an earliest board where "late" is added first but "early" reaches 10 first
    board = create_board(stack_url, "earliest", tieBreak="earliest", shards=3)
    add_member(stack_url, board, "late")
    add_member(stack_url, board, "early")
    add_member(stack_url, board, "top", 20)
    submit(stack_url, board, "early", 10)
    submit(stack_url, board, "late", 10)

    # When writes leave "early" at the same score (a zero increment, an administrator's PUT)
    submit(stack_url, board, "early", 0)
    assert send("PUT", member_url(stack_url, board, "early"), json={"score": 10}).status_code == 200

    # Then every rank is distinct, and "early" is ahead of "late" everywhere
    assert listing(stack_url, board) == [(1, "top", 20), (2, "early", 10), (3, "late", 10)]
    assert send("GET", f"{member_url(stack_url, board, 'late')}/rank").json()["rank"] == 3
    assert send("GET", f"{member_url(stack_url, board, 'early')}/rank").json()["rank"] == 2
    around = send("GET", f"{member_url(stack_url, board, 'late')}/around", params={"radius": 1}).json()
    assert [(e["rank"], e["memberId"]) for e in around["entries"]] == [(1, "top"), (2, "early"), (3, "late")]
    ranks = send("POST", f"{board_url(stack_url, board)}/ranks", json={"memberIds": ["late", "early"]}).json()
    assert [(e["rank"], e["memberId"]) for e in ranks["entries"]] == [(2, "early"), (3, "late")]


def test_earliest_tie_break_moves_a_member_that_reaches_the_score_again(stack_url: str) -> None:
    # Given "a" reached 10 before "b"
    board = create_board(stack_url, "earliest-again", tieBreak="earliest")
    add_member(stack_url, board, "a", 10)
    add_member(stack_url, board, "b", 10)
    assert [m for _, m, _ in listing(stack_url, board)] == ["a", "b"]

    # When "a" leaves 10 and comes back to it
    submit(stack_url, board, "a", 1)
    submit(stack_url, board, "a", -1)

    # Then "b" now reached 10 first, and is ranked first
    assert listing(stack_url, board) == [(1, "b", 10), (2, "a", 10)]


def test_asc_board_ranks_the_lowest_first(stack_url: str) -> None:
    # Given lap times on an asc board
    board = create_board(stack_url, "laps", order="asc", operator="best", shards=4)
    laps = {"ana": "62.5", "ben": "58.125", "cai": "60", "dee": "58.125"}
    for member, time in laps.items():
        add_member(stack_url, board, member, time)

    # When the listing and a rank are read
    entries = listing(stack_url, board)
    cai = send("GET", f"{member_url(stack_url, board, 'cai')}/rank").json()

    # Then the fastest is first (ties shared), and cai is 3rd
    assert entries == [
        (1, "ben", Decimal("58.125")),
        (1, "dee", Decimal("58.125")),
        (3, "cai", 60),
        (4, "ana", Decimal("62.5")),
    ]
    assert cai["rank"] == 3


def test_negative_and_positive_scores_rank_in_numeric_order(stack_url: str) -> None:
    # Given scores of both signs and many magnitudes on a desc board
    board = create_board(stack_url, "signs", shards=5)
    scores = [
        "-1000",
        "-2.5",
        "-0.001",
        "0",
        "0.001",
        "2.5",
        "9",
        "10",
        "1000",
        "123456789012345678901234567890e-1",
    ]
    for i, score in enumerate(scores):
        add_member(stack_url, board, f"m{i}", score)

    # When the whole listing is read
    entries = listing(stack_url, board, limit=20)

    # Then it is in numeric order, best (highest) first
    assert [e[2] for e in entries] == sorted((Decimal(s) for s in scores), reverse=True)
    assert [e[0] for e in entries] == list(range(1, len(scores) + 1))
