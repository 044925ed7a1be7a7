"""Bad input gets a clear answer at once, over HTTP: bodies that parse as JSON but hold a
lone UTF-16 surrogate or nest past the limit are 400 naming where, and change nothing."""

from __future__ import annotations

import pytest
import requests

from tests.helpers import unique_id

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
