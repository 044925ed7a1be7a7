"""Who may call what, end to end: a local stack that checks tokens as ``make run`` does,
with tokens minted by its own issuer (``POST /_local/token``), and the limits that keep
scores honest."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
import requests

from tests.helpers import decimal_json, eventually, unique_id
from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e

TIMEOUT = 30
EDGE_REFUSAL = "this token may not make this request"  # template.yaml's ACCESS_DENIED body


@pytest.fixture(scope="module")
def api(auth_stack: LocalStack) -> Api:
    return Api(auth_stack.url)


class Api:
    def __init__(self, url: str) -> None:
        self.url = url
        self.admin = self.token("admin")

    def token(self, role: str, member: str | None = None, expires_in: int | None = None) -> str:
        body: dict[str, Any] = {"role": role}
        if member is not None:
            body["memberId"] = member
        if expires_in is not None:
            body["expiresIn"] = expires_in
        response = requests.post(f"{self.url}/_local/token", json=body, timeout=TIMEOUT)
        assert response.status_code == 200, response.text
        token: str = response.json()["token"]
        return token

    def call(
        self,
        method: str,
        path: str,
        token: str | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> requests.Response:
        all_headers = dict(headers or {})
        if token is not None:
            all_headers["Authorization"] = f"Bearer {token}"
        data = json.dumps(body) if body is not None else None
        return requests.request(method, f"{self.url}{path}", data=data, headers=all_headers, timeout=TIMEOUT)

    def board(self, **settings: Any) -> str:
        board = unique_id("acl")
        response = self.call("PUT", f"/boards/{board}", self.admin, settings)
        assert response.status_code == 201, response.text
        return board

    def member(self, board: str, member: str, score: int = 0) -> None:
        response = self.call("PUT", f"/boards/{board}/members/{member}", self.admin, {"score": score})
        assert response.status_code == 201, response.text

    def score(self, board: str, member: str) -> Any:
        response = self.call("GET", f"/boards/{board}/members/{member}", self.admin)
        assert response.status_code == 200, response.text
        return decimal_json(response)["score"]


def assert_status(response: requests.Response, status: int, code: str | None = None) -> dict[str, Any]:
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json() if response.text else {}
    if code is not None:
        assert body["code"] == code, body
        assert body["message"]
    return body


# -- tokens -----------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _part(data: dict[str, Any]) -> str:
    return _b64(json.dumps(data).encode())


def bad_tokens(api: Api) -> dict[str, str]:
    good = api.token("admin")
    head, body, signature = good.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=="))
    flipped = bytearray(base64.urlsafe_b64decode(signature + "=="))
    flipped[0] ^= 0x80
    return {
        "garbage": "garbage",
        "alg none": f"{_part({'alg': 'none', 'typ': 'JWT'})}.{body}.",
        "tampered payload": f"{head}.{_part({**claims, 'sub': 'someone-else'})}.{signature}",
        "flipped signature": f"{head}.{body}.{base64.urlsafe_b64encode(bytes(flipped)).decode().rstrip('=')}",
        "expired": api.token("admin", expires_in=-300),
    }


def assert_bad_tokens_are_401(api: Api, public: str, closed: str) -> None:
    """Every kind of bad token is 401 on the routes of both kinds (with and without an edge
    authorizer on the REST door), a public board's or not, and so is another scheme."""
    for kind, token in bad_tokens(api).items():
        for path in ("/boards", f"/boards/{public}/top", f"/boards/{closed}/snapshots"):
            response = api.call("GET", path, token)
            assert response.status_code == 401, (kind, path, response.text)
            assert response.json()["code"] == "Unauthorized"

    # And a header of another scheme is 401 too
    response = api.call("GET", f"/boards/{public}/top", headers={"Authorization": "Basic YWxpY2U6cHc="})
    assert_status(response, 401, "Unauthorized")


def test_no_token_or_a_bad_one_is_401_at_the_edge_and_in_the_function(api: Api) -> None:
    # Given a board that is not publicly readable and one that is
    closed = api.board()
    public = api.board(publicRead=True)

    # When routes are called with no token, then they are 401 (the edge, or the function
    # of a route that serves publicRead boards), except a public board's reads
    assert_status(api.call("GET", "/boards"), 401, "Unauthorized")
    assert_status(api.call("PUT", f"/boards/{unique_id('x')}", body={}), 401, "Unauthorized")
    assert_status(api.call("GET", f"/boards/{closed}/top"), 401, "Unauthorized")
    assert_status(api.call("GET", f"/boards/{closed}"), 401, "Unauthorized")
    assert_status(api.call("GET", f"/boards/{public}/top"), 200)

    # And every kind of bad token is 401 on both kinds of route, public board or not, and
    # so is a header of another scheme
    assert_bad_tokens_are_401(api, public, closed)


def test_a_request_the_caller_may_not_make_is_refused_whatever_its_body(api: Api) -> None:
    # Given a board that is not publicly readable and takes admins' writes only, a member on
    # it, and a player's token
    closed = api.board()
    api.member(closed, "alice")
    alice = api.token("player", "alice")

    # When bad bodies are sent by callers who may not make the request, then each is 401 or
    # 403, never the 400 of its body: every handler authorizes before it parses
    assert_status(api.call("POST", f"/boards/{closed}/ranks", body={"memberIds": 7}), 401, "Unauthorized")
    score = f"/boards/{closed}/members/alice/score"
    assert_status(api.call("POST", score, alice, {"value": "x"}), 403, "Forbidden")
    events = f"/boards/{closed}/events"
    assert_status(api.call("POST", events, alice, {"events": "x"}), 403, "Forbidden")
    member = f"/boards/{closed}/members/alice"
    assert_status(api.call("PUT", member, alice, {"data": 1}), 403, "Forbidden")
    rivals = f"/boards/{closed}/members/bob/rivals"
    assert_status(api.call("PUT", rivals, alice, {"memberIds": 1}), 403, "Forbidden")
    rank = f"/boards/{closed}/members/alice/rank?consistent=maybe"
    assert_status(api.call("GET", rank), 401, "Unauthorized")


def malformed_tokens(api: Api) -> dict[str, str]:
    """Tokens that cannot be read: each once gave a 500 (an exception in the authorizer)."""
    head, body, signature = api.token("admin").split(".")
    return {
        "signature of 4n+1 characters": f"{head}.{body}.{signature}{'A' * ((1 - len(signature)) % 4 or 4)}",
        "payload not ASCII": f"{head}.{body}\u00e9.{signature}",
        "exp not a number": f"{head}.{_part({'exp': 'soon'})}.{signature}",
    }


def test_a_malformed_token_is_401_with_the_json_error_body(api: Api) -> None:
    # Given a board that is publicly readable, and one that is not
    public = api.board(publicRead=True)
    closed = api.board()

    # When a token that cannot be read is sent to routes behind the edge authorizer and to
    # routes whose function checks it (the public reads)
    for kind, token in malformed_tokens(api).items():
        for path in ("/boards", f"/boards/{closed}/snapshots", f"/boards/{public}/top", f"/boards/{closed}"):
            response = api.call("GET", path, token)

            # Then each answers 401 with the API's JSON error body, never 500
            assert response.status_code == 401, (kind, path, response.text)
            assert response.headers["Content-Type"].startswith("application/json"), (kind, path)
            body = response.json()
            assert body["code"] == "Unauthorized", (kind, path, body)
            assert body["message"], (kind, path, body)


def test_the_local_issuer_refuses_a_malformed_request(api: Api) -> None:
    for body in ({"role": "root"}, {"role": "player"}, {"role": "admin", "memberId": "a"}, {"x": 1}):
        response = requests.post(f"{api.url}/_local/token", json=body, timeout=TIMEOUT)
        assert_status(response, 400, "ValidationError")


# -- the role table ---------------------------------------------------------------------


def test_a_player_reads_everything_but_others_inboxes_and_rivals(api: Api) -> None:
    # Given a board with alice and bob, and alice's token
    board = api.board()
    for member in ("alice", "bob"):
        api.member(board, member, 10)
    alice = api.token("player", "alice")
    member = f"/boards/{board}/members"

    # When alice reads the board's rankings and members, then she may
    for path in (
        f"/boards/{board}",
        "/boards",
        f"/boards/{board}/top",
        f"{member}/bob",
        f"{member}/bob/rank",
    ):
        assert_status(api.call("GET", path, alice), 200)
    assert_status(api.call("GET", f"{member}/bob/around", alice), 200)
    assert_status(api.call("POST", f"/boards/{board}/ranks", alice, {"memberIds": ["bob"]}), 200)
    assert_status(api.call("GET", f"/boards/{board}/snapshots", alice), 200)

    # And her own rivals and inbox, but not bob's (403)
    assert_status(api.call("PUT", f"{member}/alice/rivals", alice, {"memberIds": ["bob"]}), 200)
    assert_status(api.call("GET", f"{member}/alice/rivals", alice), 200)
    assert_status(api.call("GET", f"{member}/alice/notifications", alice), 200)
    assert_status(api.call("GET", f"{member}/bob/notifications", alice), 403, "Forbidden")
    assert_status(api.call("GET", f"{member}/bob/rivals", alice), 403, "Forbidden")
    assert_status(api.call("PUT", f"{member}/bob/rivals", alice, {"memberIds": []}), 403, "Forbidden")


def test_a_players_admin_only_request_is_refused_at_the_edge(api: Api) -> None:
    # Given a board and a player
    board = api.board()
    api.member(board, "alice")
    alice = api.token("player", "alice")

    # When the player creates a board, changes this one's settings, or deletes a member
    # Then the edge refuses it (403, the gateway's own answer: no function ran)
    for method, path, body in (
        ("PUT", f"/boards/{unique_id('new')}", {}),
        ("PUT", f"/boards/{board}", {"publicRead": True, "clientWrites": True}),
        ("DELETE", f"/boards/{board}/members/alice", None),
    ):
        refused = assert_status(api.call(method, path, alice, body), 403, "Forbidden")
        assert refused["message"] == EDGE_REFUSAL

    # And the board is as it was
    settings = assert_status(api.call("GET", f"/boards/{board}", api.admin), 200)
    assert (settings["publicRead"], settings["clientWrites"]) == (False, False)
    assert api.score(board, "alice") == 0


def test_client_writes_off_and_on(api: Api) -> None:
    # Given a board that takes no players' writes, with alice and bob, and alice's token
    board = api.board(operator="increment")
    api.member(board, "alice", 5)
    api.member(board, "bob", 5)
    alice = api.token("player", "alice")
    score = f"/boards/{board}/members/alice/score"

    # When clientWrites is off, alice may not submit her score, add herself or post events
    assert_status(api.call("POST", score, alice, {"value": 1}), 403, "Forbidden")
    assert_status(
        api.call("PUT", f"/boards/{board}/members/alice", alice, {"data": {"a": 1}}), 403, "Forbidden"
    )
    events = {"events": [{"memberId": "alice", "value": 1}]}
    assert_status(api.call("POST", f"/boards/{board}/events", alice, events), 403, "Forbidden")
    assert api.score(board, "alice") == 5

    # When an admin turns it on (keeping the other settings), she may, for herself only
    turned = assert_status(api.call("PUT", f"/boards/{board}", api.admin, {"clientWrites": True}), 200)
    assert turned["clientWrites"] is True
    assert turned["operator"] == "increment"
    assert_status(api.call("POST", score, alice, {"value": 1}), 200)
    assert api.score(board, "alice") == 6
    assert_status(api.call("PUT", f"/boards/{board}/members/alice", alice, {"data": {"a": 1}}), 200)
    assert_status(
        api.call("POST", f"/boards/{board}/members/bob/score", alice, {"value": 1}), 403, "Forbidden"
    )
    assert_status(api.call("PUT", f"/boards/{board}/members/bob", alice, {"data": {}}), 403, "Forbidden")
    assert api.score(board, "bob") == 5

    # And a score in her own PUT is an admin's write: 403, nothing changed
    refused = assert_status(api.call("PUT", f"/boards/{board}/members/alice", alice, {"score": 99}), 403)
    assert "score" in refused["message"]
    assert api.score(board, "alice") == 6

    # And so is hidden, even false, on herself or on another member
    for member, body in (
        ("alice", {"hidden": False}),
        ("alice", {"hidden": True}),
        ("bob", {"hidden": True}),
    ):
        refused = assert_status(api.call("PUT", f"/boards/{board}/members/{member}", alice, body), 403)
        assert refused["code"] == "Forbidden"
    shown = assert_status(api.call("GET", f"/boards/{board}/members/bob", api.admin), 200)
    assert shown["hidden"] is False
    ranked = assert_status(api.call("GET", f"/boards/{board}/members/alice/rank", alice), 200)
    assert ranked["rank"] >= 1

    # And a player may add herself on such a board
    carol = api.token("player", "carol")
    assert_status(api.call("PUT", f"/boards/{board}/members/carol", carol, {"data": {"team": "red"}}), 201)


def test_a_mixed_events_batch_is_refused_whole(api: Api) -> None:
    # Given an increment board that takes players' writes
    board = api.board(operator="increment", clientWrites=True)
    api.member(board, "alice")
    api.member(board, "bob")
    alice = api.token("player", "alice")

    # When alice posts a batch that holds one event of bob's
    batch = {"events": [{"memberId": "alice", "value": 1}, {"memberId": "bob", "value": 1}]}
    refused = assert_status(api.call("POST", f"/boards/{board}/events", alice, batch), 403, "Forbidden")

    # Then nothing of it is counted; her own batch is
    assert "bob" in refused["message"]
    own = {"events": [{"memberId": "alice", "value": 2}, {"memberId": "alice", "value": 3}]}
    assert_status(api.call("POST", f"/boards/{board}/events", alice, own), 202)
    fresh = api.call("GET", f"/boards/{board}/members/alice?fresh=true", api.admin)
    assert decimal_json(fresh)["score"] == 5
    eventually(lambda: api.score(board, "alice") == 5 and api.score(board, "bob") == 0)


def test_public_read_on_and_off(api: Api) -> None:
    # Given a public board with a member
    board = api.board(publicRead=True)
    api.member(board, "alice", 3)

    # When anyone reads it without a token, then the read routes answer
    for path in ("", "/top", "/members/alice/rank", "/members/alice/around", "/snapshots"):
        assert_status(api.call("GET", f"/boards/{board}{path}"), 200)
    assert_status(api.call("POST", f"/boards/{board}/ranks", body={"memberIds": ["alice"]}), 200)
    # but not the member, its inbox, or any write
    assert_status(api.call("GET", f"/boards/{board}/members/alice"), 401, "Unauthorized")
    assert_status(api.call("POST", f"/boards/{board}/members/alice/score", body={"value": 1}), 401)

    # When an admin turns publicRead off, then the same reads are 401
    assert_status(api.call("PUT", f"/boards/{board}", api.admin, {"publicRead": False}), 200)
    for path in ("", "/top", "/members/alice/rank"):
        assert_status(api.call("GET", f"/boards/{board}{path}"), 401, "Unauthorized")


# -- keeping scores honest ---------------------------------------------------------------


def test_limits_bound_submissions_and_events_but_not_an_admins_put(api: Api) -> None:
    # Given an increment board with limits -10..5000, and a member at 100
    board = api.board(operator="increment", limits={"minValue": -10, "maxValue": 5000})
    api.member(board, "m", 100)
    score = f"/boards/{board}/members/m/score"

    # When values on each side of each bound are submitted
    for value, status in ((-11, 400), (-10, 200), (5000, 200), (5001, 400), (5000.5, 400)):
        response = api.call("POST", score, api.admin, {"value": value})
        body = assert_status(response, status)
        if status == 400:
            assert body["code"] == "ValidationError"
            assert "limits.minValue" in body["message"] or "limits.maxValue" in body["message"]

    # Then only the allowed ones counted
    assert api.score(board, "m") == 100 - 10 + 5000

    # And an events batch with one value out of bounds is refused whole, naming it
    batch = {"events": [{"memberId": "m", "value": 1}, {"memberId": "m", "value": 6000}]}
    refused = assert_status(
        api.call("POST", f"/boards/{board}/events", api.admin, batch), 400, "ValidationError"
    )
    assert "events[1].value" in refused["message"]
    assert "limits.maxValue" in refused["message"]
    fresh = decimal_json(api.call("GET", f"/boards/{board}/members/m?fresh=true", api.admin))
    assert fresh["pendingEvents"] == 0

    # And an admin's PUT with a score is bound by none of them
    assert_status(api.call("PUT", f"/boards/{board}/members/m", api.admin, {"score": 999999}), 200)
    assert api.score(board, "m") == 999999

    # And the limits show on the board, and {} removes them
    assert assert_status(api.call("GET", f"/boards/{board}", api.admin), 200)["limits"] == {
        "minValue": -10,
        "maxValue": 5000,
    }
    assert assert_status(api.call("PUT", f"/boards/{board}", api.admin, {"limits": {}}), 200)["limits"] == {}
    assert_status(api.call("POST", score, api.admin, {"value": 6000}), 200)


def test_bad_limits_are_400_naming_the_field(api: Api) -> None:
    for limits, field in (
        ({"minValue": 5, "maxValue": 1}, "limits.minValue"),
        ({"maxSubmissionsPerMinute": 0}, "limits.maxSubmissionsPerMinute"),
        ({"maxSubmissionsPerMinute": 1.5}, "limits.maxSubmissionsPerMinute"),
        ({"maxValue": "7"}, "limits.maxValue"),
        ({"other": 1}, "limits.other"),
        ([], "limits"),
    ):
        body = assert_status(
            api.call("PUT", f"/boards/{unique_id('bad')}", api.admin, {"limits": limits}), 400
        )
        assert field in body["message"], body
    for flag in ("clientWrites", "publicRead"):
        body = assert_status(api.call("PUT", f"/boards/{unique_id('bad')}", api.admin, {flag: "yes"}), 400)
        assert flag in body["message"]


def set_clock(api: Api, now: str | None) -> None:
    response = requests.put(f"{api.url}/_devstack/clock", json={"now": now}, timeout=TIMEOUT)
    assert response.status_code == 200, response.text


def test_the_rate_limit_at_the_edge_of_a_minute_with_replays_not_counted(api: Api) -> None:
    # Given a board that allows 3 submissions a member a minute, with a player who may write
    board = api.board(operator="increment", clientWrites=True, limits={"maxSubmissionsPerMinute": 3})
    api.member(board, "m")
    player = api.token("player", "m")
    score = f"/boards/{board}/members/m/score"
    try:
        set_clock(api, "2031-01-06T12:00:58Z")

        # When it submits once with an Idempotency-Key, replays that twice, and submits twice more
        keyed = {"Idempotency-Key": unique_id("key")}
        assert_status(api.call("POST", score, player, {"value": 1}, keyed), 200)
        for _ in range(2):
            assert decimal_json(api.call("POST", score, player, {"value": 1}, keyed))["score"] == 1
        for _ in range(2):
            assert_status(api.call("POST", score, player, {"value": 1}), 200)

        # Then the next one in the same minute is 429 with Retry-After to the minute's end
        refused = api.call("POST", score, player, {"value": 1})
        assert_status(refused, 429, "RateLimited")
        assert refused.headers["Retry-After"] == "2"
        assert api.score(board, "m") == 3

        # And an admin's submission counts against the member too; its PUT does not
        assert_status(api.call("POST", score, api.admin, {"value": 1}), 429, "RateLimited")
        assert_status(api.call("PUT", f"/boards/{board}/members/m", api.admin, {"score": 10}), 200)

        # When the next minute starts, it may submit again
        set_clock(api, "2031-01-06T12:01:00Z")
        assert decimal_json(api.call("POST", score, player, {"value": 1}))["score"] == 11
    finally:
        set_clock(api, None)


def test_a_refused_submission_does_not_use_up_the_rate(api: Api) -> None:
    # Given an increment board with 2 submissions a minute and a maxValue, and a member
    # whose score is near the largest a score may be
    board = api.board(limits={"maxSubmissionsPerMinute": 2, "maxValue": 10**29})
    api.member(board, "m", 9 * 10**29)
    score = f"/boards/{board}/members/m/score"

    # When submissions are refused for other reasons: a value over maxValue, a result that
    # would leave the bounds of a score (refused after it was counted), no such member
    assert_status(api.call("POST", score, api.admin, {"value": 10**29 + 1}), 400)
    assert_status(api.call("POST", score, api.admin, {"value": 10**29}), 400)
    assert_status(api.call("POST", f"/boards/{board}/members/ghost/score", api.admin, {"value": 1}), 404)
    assert api.score(board, "m") == 9 * 10**29

    # Then the member still has its 2
    for _ in range(2):
        assert_status(api.call("POST", score, api.admin, {"value": 1}), 200)
    assert_status(api.call("POST", score, api.admin, {"value": 1}), 429, "RateLimited")
