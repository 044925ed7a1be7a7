"""The HTTP door (template.yaml's HttpApi=on), end to end: a local stack serving the HTTP
API's routes as API Gateway's HTTP API would (``--front-door http``: payload format 1.0,
no edge authorizer, unknown routes to the ``$default`` route), with tokens checked. The
access rules are the REST door's (tests/e2e/test_access.py), and every answer the
functions give keeps the contract's ``{"code", "message"}``; only the message of a refusal
differs, since the function words it instead of the edge."""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from tests.conftest import StackLauncher
from tests.e2e.test_access import Api, assert_bad_tokens_are_401, assert_status
from tests.helpers import decimal_json, unique_id

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def api(launch_stack: StackLauncher) -> Iterator[Api]:
    with launch_stack("--front-door", "http", name="http-door", auth=True) as local:
        yield Api(local.url)


def test_a_board_through_the_http_door(api: Api) -> None:
    # Given a board made through the HTTP door, with members put there
    board = api.board()
    for member, score in (("alice", 30), ("bob", 20), ("carol", 10)):
        api.member(board, member, score)

    # When a score is submitted (the default operator adds it) and the board is read
    submitted = api.call("POST", f"/boards/{board}/members/carol/score", api.admin, {"value": 15})
    # (consistent=true: the index, not the head, which may lag the score by up to 2 s)
    top = api.call("GET", f"/boards/{board}/top?limit=2&consistent=true", api.admin)
    rank = api.call("GET", f"/boards/{board}/members/carol/rank", api.admin)

    # Then each route answers as through the REST door
    assert_status(submitted, 200)
    assert decimal_json(submitted)["score"] == 25
    assert [(e["rank"], e["memberId"]) for e in decimal_json(top)["entries"]] == [(1, "alice"), (2, "carol")]
    assert top.headers["ETag"]
    assert decimal_json(rank)["rank"] == 2
    assert api.score(board, "bob") == 20


def test_an_unknown_route_is_the_contracts_404(api: Api) -> None:
    # When a path, or a method on a known path, that no route serves is called, with or
    # without a token
    for method, path, token in (
        ("GET", "/nowhere", None),
        ("GET", "/boards/x/nowhere", api.admin),
        ("PATCH", "/boards/x", api.admin),
        ("POST", "/", None),
    ):
        # Then the $default route answers 404 NotFound in the contract's shape
        assert_status(api.call(method, path, token), 404, "NotFound")

    # And the page is still served at /
    page = api.call("GET", "/")
    assert page.status_code == 200
    assert page.headers["Content-Type"].startswith("text/html")


def test_no_token_or_a_bad_one_is_401(api: Api) -> None:
    # Given a board that is not publicly readable and one that is
    closed = api.board()
    public = api.board(publicRead=True)

    # When routes are called with no token, then they are 401 in the contract's shape,
    # before the request is parsed (an empty body is not a 400 here), except a public
    # board's reads
    assert_status(api.call("GET", "/boards"), 401, "Unauthorized")
    assert_status(api.call("PUT", f"/boards/{unique_id('x')}", body={}), 401, "Unauthorized")
    assert_status(api.call("POST", f"/boards/{closed}/members/a/score"), 401, "Unauthorized")
    assert_status(api.call("POST", f"/boards/{closed}/events"), 401, "Unauthorized")
    assert_status(api.call("GET", f"/boards/{closed}/top"), 401, "Unauthorized")
    assert_status(api.call("GET", f"/boards/{public}/top"), 200)

    # And every kind of bad token is 401, public board or not, and so is another scheme
    assert_bad_tokens_are_401(api, public, closed)


def test_a_player_is_refused_what_only_an_admin_may_do(api: Api) -> None:
    # Given a board with alice and bob, and alice's token
    board = api.board()
    api.member(board, "alice")
    api.member(board, "bob")
    alice = api.token("player", "alice")
    member = f"/boards/{board}/members"

    # When alice creates a board, changes this one's settings, deletes a member or
    # re-shards (with a body that would be a 400 for an admin)
    for method, path, body in (
        ("PUT", f"/boards/{unique_id('new')}", {}),
        ("PUT", f"/boards/{board}", {"publicRead": True, "clientWrites": True}),
        ("DELETE", f"{member}/bob", None),
        ("POST", f"/boards/{board}/reshard", {"shards": "many"}),
    ):
        # Then the function refuses it, 403 in the contract's shape
        refused = assert_status(api.call(method, path, alice, body), 403, "Forbidden")
        assert "only an admin" in refused["message"]

    # And she reads the board, and her own inbox but not bob's
    assert_status(api.call("GET", f"/boards/{board}/top", alice), 200)
    assert_status(api.call("GET", f"{member}/alice/notifications", alice), 200)
    assert_status(api.call("GET", f"{member}/bob/notifications", alice), 403, "Forbidden")

    # And the board is as it was
    settings = assert_status(api.call("GET", f"/boards/{board}", api.admin), 200)
    assert (settings["publicRead"], settings["clientWrites"]) == (False, False)
    assert api.score(board, "bob") == 0


def test_public_read_answers_anyone_and_nothing_else(api: Api) -> None:
    # Given a public board with a member
    board = api.board(publicRead=True)
    api.member(board, "alice", 3)

    # When anyone reads it without a token, then the read routes answer
    for path in ("", "/top", "/members/alice/rank", "/members/alice/around", "/snapshots", "/scores"):
        assert_status(api.call("GET", f"/boards/{board}{path}?memberIds=alice"), 200)
    assert_status(api.call("POST", f"/boards/{board}/ranks", body={"memberIds": ["alice"]}), 200)
    # but not the member, or any write
    assert_status(api.call("GET", f"/boards/{board}/members/alice"), 401, "Unauthorized")
    assert_status(api.call("POST", f"/boards/{board}/members/alice/score", body={"value": 1}), 401)

    # When an admin turns publicRead off, then the same reads are 401
    assert_status(api.call("PUT", f"/boards/{board}", api.admin, {"publicRead": False}), 200)
    for path in ("", "/top", "/members/alice/rank"):
        assert_status(api.call("GET", f"/boards/{board}{path}"), 401, "Unauthorized")


def test_a_body_over_the_quota_is_the_http_apis_own_answer(api: Api) -> None:
    # When a request says its body is over the 10 MiB quota
    url = urlsplit(api.url)
    connection = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    try:
        connection.putrequest("PUT", f"/boards/{unique_id('big')}")
        connection.putheader("Content-Length", str(10 * 1024 * 1024 + 1))
        connection.endheaders()
        response = connection.getresponse()
        status, body = response.status, json.loads(response.read())
    finally:
        connection.close()

    # Then the HTTP API refuses it in its own shape, which no gateway response reshapes
    # (docs/operations.md, "The two front doors")
    assert (status, body) == (413, {"message": "Request Entity Too Large"})
