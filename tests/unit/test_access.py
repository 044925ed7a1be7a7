"""Who may call what (podium.access): the whole table of (role, route, board policy) and
its answer, against the rules of the API written out independently below."""

from __future__ import annotations

import pytest

from podium.access import ADMIN, ANONYMOUS, Caller, Role, Route, caller_from_claims, reachable, require
from podium.errors import Forbidden, NotFound, Unauthorized
from podium.models import BoardPolicy

PLAYER = Caller(Role.PLAYER, "alice")
POLICIES = {
    "closed": BoardPolicy(),
    "clientWrites": BoardPolicy(client_writes=True),
    "publicRead": BoardPolicy(public_read=True),
    "both": BoardPolicy(client_writes=True, public_read=True),
}
ANONYMOUS_READS = {"GET_BOARD", "TOP", "RANK", "AROUND", "RANKS", "SNAPSHOTS", "SCORES"}
PLAYER_READS = ANONYMOUS_READS | {"LIST_BOARDS", "GET_MEMBER"}
OWN = {"GET_RIVALS", "PUT_RIVALS", "NOTIFICATIONS"}
CLIENT_WRITES = {"PUT_MEMBER", "SUBMIT_SCORE", "LOG_EVENTS"}


def expected(role: str, route: str, policy: str, own: bool) -> int:
    """The API's rules, as a status: 200 allowed, 401, 403."""
    board = POLICIES[policy]
    if role == "admin":
        return 200
    if role == "anonymous":
        return 200 if route in ANONYMOUS_READS and board.public_read else 401
    if route in PLAYER_READS:
        return 200
    if route in OWN:
        return 200 if own else 403
    if route in CLIENT_WRITES:
        return 200 if own and board.client_writes else 403
    return 403


def status(caller: Caller, route: Route, policy: BoardPolicy, members: list[str]) -> int:
    try:
        require(caller, route, board=policy, members=members)
    except Unauthorized:
        return 401
    except Forbidden:
        return 403
    return 200


CALLERS = {"admin": ADMIN, "player": PLAYER, "anonymous": ANONYMOUS}


@pytest.mark.parametrize("role", sorted(CALLERS))
@pytest.mark.parametrize("route", [route.name for route in Route])
@pytest.mark.parametrize("policy", sorted(POLICIES))
@pytest.mark.parametrize("own", [True, False])
def test_the_role_table(role: str, route: str, policy: str, own: bool) -> None:
    # Given a caller, a route, a board's policy and whose member the request acts for
    members = ["alice" if own else "bob"]

    # When access is decided, then it is what the API's rules say
    assert status(CALLERS[role], Route[route], POLICIES[policy], members) == expected(
        role, route, policy, own
    )


def test_a_player_may_not_set_admin_fields_even_on_an_open_board() -> None:
    # Given a board that takes players' writes
    # When a player sends its own member with a score, or with hidden
    # Then it is 403 naming the field; its data alone is fine
    for field in ("score", "hidden"):
        with pytest.raises(Forbidden, match=field):
            require(PLAYER, Route.PUT_MEMBER, board=POLICIES["both"], members=["alice"], admin_fields=[field])
    require(PLAYER, Route.PUT_MEMBER, board=POLICIES["both"], members=["alice"])


def test_a_batch_with_another_members_event_is_refused_whole() -> None:
    # Given a board that takes players' writes, and events for alice and for bob
    # When alice posts them, then the batch is refused, naming bob
    with pytest.raises(Forbidden, match="bob"):
        require(PLAYER, Route.LOG_EVENTS, board=POLICIES["clientWrites"], members=["alice", "bob", "alice"])


def test_a_missing_board_is_401_to_anonymous_and_404_to_a_players_write() -> None:
    with pytest.raises(Unauthorized):
        require(ANONYMOUS, Route.TOP, board=None)
    with pytest.raises(NotFound):
        require(PLAYER, Route.SUBMIT_SCORE, board=None, members=["alice"])


def test_roles_come_from_the_token() -> None:
    def valid(text: str) -> bool:
        return "#" not in text

    assert caller_from_claims({"scope": "openid podium/admin"}, "sub", valid) == ADMIN
    assert caller_from_claims({"scp": ["podium/admin"]}, "sub", valid) == ADMIN
    assert caller_from_claims({"sub": "alice"}, "sub", valid) == PLAYER
    assert caller_from_claims({"sub": "x", "username": "alice"}, "username", valid) == PLAYER
    assert caller_from_claims({"sub": "a#b"}, "sub", valid) == Caller(Role.PLAYER, None)


def test_the_edge_lets_a_player_reach_every_route_but_the_admins() -> None:
    assert reachable(Role.ADMIN) == frozenset(Route)
    assert Route.CREATE_BOARD not in reachable(Role.PLAYER)
    assert Route.DELETE_MEMBER not in reachable(Role.PLAYER)
    assert {Route.SUBMIT_SCORE, Route.PUT_MEMBER, Route.NOTIFICATIONS} <= reachable(Role.PLAYER)


@pytest.mark.parametrize("value", [5, ["alice"], {"id": "alice"}, True, None])
def test_a_member_claim_of_the_wrong_type_is_401_not_a_player_without_a_member(value: object) -> None:
    # Given a token whose member claim is there but not a string (JSON null included)
    claims = {"sub": "x", "player_id": value}

    # When its caller is found, then it is refused, not taken for a player with no member
    with pytest.raises(Unauthorized, match="player_id"):
        caller_from_claims(claims, "player_id", lambda text: True)


def test_a_member_claim_that_is_absent_or_not_a_member_id_gives_a_player_without_a_member() -> None:
    assert caller_from_claims({"sub": "x"}, "player_id", lambda text: True) == Caller(Role.PLAYER, None)
    not_a_member = caller_from_claims({"sub": "a#b"}, "sub", lambda text: "#" not in text)
    assert not_a_member == Caller(Role.PLAYER, None)
