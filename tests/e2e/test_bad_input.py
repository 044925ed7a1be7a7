"""Bad input gets a clear answer at once, over HTTP: bodies that parse as JSON but hold a
lone UTF-16 surrogate, nest past the limit or hold a number in data that DynamoDB cannot
keep are 400 naming where, and so is a body that is not UTF-8; they change nothing."""

from __future__ import annotations

from decimal import Decimal

import pytest
import requests

from tests.helpers import decimal_json, unique_id

pytestmark = pytest.mark.e2e

TIMEOUT = 30


def send(method: str, url: str, body: str) -> requests.Response:
    """The body's text as is (its escapes are the point)."""
    return requests.request(
        method, url, data=body.encode(), headers={"Content-Type": "application/json"}, timeout=TIMEOUT
    )


@pytest.mark.parametrize(
    ("body", "where"),
    [
        ('{"data": {"name": "\\ud800"}}', "data.name"),
        ('{"data": {"\\udc00": 1}}', "a key in data"),
        ('{"data": ' + "[" * 5000 + "]" * 5000 + "}", "nests deeper than"),
    ],
)
def test_a_member_body_that_cannot_be_stored_is_400_and_nothing_is_written(
    stack_url: str, body: str, where: str
) -> None:
    # Given a board
    board = unique_id("bad")
    assert requests.put(f"{stack_url}/boards/{board}", json={}, timeout=TIMEOUT).status_code == 201
    member_url = f"{stack_url}/boards/{board}/members/m"

    # When a member is added with a body that is JSON but not storable
    response = send("PUT", member_url, body)

    # Then it is a 400 naming where, and there is no member
    assert response.status_code == 400, response.text
    assert response.json()["code"] == "ValidationError"
    assert where in response.json()["message"]
    assert requests.get(member_url, timeout=TIMEOUT).status_code == 404


def test_a_board_title_with_a_lone_surrogate_is_400(stack_url: str) -> None:
    board = unique_id("bad")
    response = send("PUT", f"{stack_url}/boards/{board}", '{"title": "cup \\udbff"}')
    assert response.status_code == 400, response.text
    assert response.json()["message"].startswith("title")
    assert requests.get(f"{stack_url}/boards/{board}", timeout=TIMEOUT).status_code == 404


def test_a_body_over_the_gateway_limit_is_413_before_it_is_read(stack_url: str) -> None:
    """API Gateway refuses a body over 10 MiB itself (413, in the API's error shape); the
    local gateway does too, answering from the header alone without reading the body."""
    import json
    import socket
    from urllib.parse import urlsplit

    board = unique_id("huge")
    address = urlsplit(stack_url)
    with socket.create_connection((address.hostname, address.port), timeout=TIMEOUT) as connection:
        connection.sendall(
            f"PUT /boards/{board} HTTP/1.1\r\nHost: {address.netloc}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {11 * 1024 * 1024}\r\n\r\n".encode()
        )
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = connection.recv(65536)
            if not chunk:
                break
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.split(b" ")[1] == b"413"
    error = json.loads(body)
    assert error["code"] == "PayloadTooLarge"
    assert "10 MiB" in error["message"]
    assert requests.get(f"{stack_url}/boards/{board}", timeout=TIMEOUT).status_code == 404


# Found by the fuzzer (tests/e2e/test_fuzz.py): both were 500.
def test_a_body_that_is_not_utf8_is_400(stack_url: str) -> None:
    # Given a member
    board = unique_id("bad")
    assert requests.put(f"{stack_url}/boards/{board}", json={}, timeout=TIMEOUT).status_code == 201
    member_url = f"{stack_url}/boards/{board}/members/m"
    assert requests.put(member_url, json={"score": 5}, timeout=TIMEOUT).status_code == 201

    # When its rivals are replaced with a body of bytes that are not UTF-8
    response = requests.put(
        f"{member_url}/rivals",
        data=b"\xaa\xff",
        headers={"Content-Type": "application/json"},
        timeout=TIMEOUT,
    )

    # Then it is a 400 saying so, and nothing changed
    assert response.status_code == 400, response.text
    assert response.json() == {
        "code": "ValidationError",
        "message": "the body is not valid JSON: it is not UTF-8 text",
    }
    assert requests.get(f"{member_url}/rivals", timeout=TIMEOUT).json() == {"memberIds": []}


def test_numbers_in_data_are_kept_exactly_up_to_dynamodb_limits_and_400_past_them(stack_url: str) -> None:
    # Given a board
    board = unique_id("bad")
    assert requests.put(f"{stack_url}/boards/{board}", json={}, timeout=TIMEOUT).status_code == 201

    # When a member's data holds numbers at the edges of DynamoDB's Number type, then they
    # come back exactly
    edges = '{"data": {"big": -9.9999999999999999999999999999999999999e125, "tiny": 1e-130, "n": [0.10]}}'
    response = send("PUT", f"{stack_url}/boards/{board}/members/edge", edges)
    assert response.status_code == 201, response.text
    read = requests.get(f"{stack_url}/boards/{board}/members/edge", timeout=TIMEOUT)
    assert decimal_json(read)["data"] == {
        "big": Decimal("-9.9999999999999999999999999999999999999e125"),
        "tiny": Decimal("1e-130"),
        "n": [Decimal("0.1")],
    }

    # When one holds a number past them, then it is 400 naming it, and there is no member
    member_url = f"{stack_url}/boards/{board}/members/past"
    response = send("PUT", member_url, '{"data": {"n": [1, -1.7976931348623157e+308]}}')
    assert response.status_code == 400, response.text
    assert response.json()["message"].startswith("data.n[1] must have at most 38 significant digits")
    assert requests.get(member_url, timeout=TIMEOUT).status_code == 404
