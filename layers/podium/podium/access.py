"""Who may call what: the one place where a caller's role, the route and the board's
policy decide whether a request goes on (401 with no usable identity, 403 for a role
that may not). The edge authorizer asks ``reachable`` which routes a role can ever call;
the functions ask ``require`` with what only they know (the board's policy, whose member).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any

from podium.errors import Forbidden, NotFound, Unauthorized
from podium.models import BoardPolicy
from podium.values import frozen

ADMIN_SCOPE = "podium/admin"


class Role(StrEnum):
    ADMIN = "admin"
    PLAYER = "player"
    ANONYMOUS = "anonymous"


@frozen
class Caller:
    role: Role
    member_id: str | None = None  # a player's own memberId (the token's member claim)

    @property
    def is_admin(self) -> bool:
        return self.role is Role.ADMIN


ADMIN = Caller(Role.ADMIN)
ANONYMOUS = Caller(Role.ANONYMOUS)


def scopes(claims: Mapping[str, Any]) -> set[str]:
    """OAuth scopes: a space-separated ``scope`` (Cognito, RFC 8693) or a list in ``scp``."""
    found: set[str] = set()
    if isinstance(claims.get("scope"), str):
        found.update(claims["scope"].split())
    if isinstance(claims.get("scp"), list):
        found.update(str(scope) for scope in claims["scp"])
    return found


def caller_from_claims(claims: Mapping[str, Any], member_claim: str, valid_member: Any) -> Caller:
    """An admin holds the ``podium/admin`` scope; any other valid token is a player whose
    memberId is the ``member_claim`` claim (None when it holds no valid memberId: such a
    player may read, and write nothing of its own). A member claim that is not a string
    (a number, a list, null) is 401: the token is not what the issuer should sign."""
    if ADMIN_SCOPE in scopes(claims):
        return ADMIN
    if member_claim not in claims:
        return Caller(Role.PLAYER, None)
    member = claims[member_claim]
    if not isinstance(member, str):
        raise Unauthorized(f"the token's {member_claim} claim (its memberId) is not a string")
    return Caller(Role.PLAYER, member if valid_member(member) else None)


class Route(StrEnum):
    """Every route of the API, by what it does."""

    CREATE_BOARD = "PUT /boards/{boardId}"
    GET_BOARD = "GET /boards/{boardId}"
    LIST_BOARDS = "GET /boards"
    PUT_MEMBER = "PUT /boards/{boardId}/members/{memberId}"
    GET_MEMBER = "GET /boards/{boardId}/members/{memberId}"
    DELETE_MEMBER = "DELETE /boards/{boardId}/members/{memberId}"
    SUBMIT_SCORE = "POST /boards/{boardId}/members/{memberId}/score"
    TOP = "GET /boards/{boardId}/top"
    RANK = "GET /boards/{boardId}/members/{memberId}/rank"
    AROUND = "GET /boards/{boardId}/members/{memberId}/around"
    RANKS = "POST /boards/{boardId}/ranks"
    PUT_RIVALS = "PUT /boards/{boardId}/members/{memberId}/rivals"
    GET_RIVALS = "GET /boards/{boardId}/members/{memberId}/rivals"
    NOTIFICATIONS = "GET /boards/{boardId}/members/{memberId}/notifications"
    LOG_EVENTS = "POST /boards/{boardId}/events"
    SNAPSHOTS = "GET /boards/{boardId}/snapshots"
    SCORES = "GET /boards/{boardId}/scores"
    RESHARD = "POST /boards/{boardId}/reshard"

    @property
    def method(self) -> str:
        return self.value.split(" ", 1)[0]

    @property
    def path(self) -> str:
        return self.value.split(" ", 1)[1]


# The table. Anonymous callers may use PUBLIC_READS on a publicRead board and nothing else.
PUBLIC_READS = frozenset(
    {Route.GET_BOARD, Route.TOP, Route.RANK, Route.AROUND, Route.RANKS, Route.SNAPSHOTS, Route.SCORES}
)
PLAYER_READS = PUBLIC_READS | {Route.LIST_BOARDS, Route.GET_MEMBER}
OWN_ONLY = frozenset({Route.GET_RIVALS, Route.PUT_RIVALS, Route.NOTIFICATIONS})  # a player's own
CLIENT_WRITES = frozenset({Route.PUT_MEMBER, Route.SUBMIT_SCORE, Route.LOG_EVENTS})  # own, clientWrites
ADMIN_ONLY = frozenset(Route) - PLAYER_READS - OWN_ONLY - CLIENT_WRITES


def reachable(role: Role) -> frozenset[Route]:
    """The routes a role can call on some board (the edge lets these through; the
    function decides the rest)."""
    if role is Role.ADMIN:
        return frozenset(Route)
    if role is Role.PLAYER:
        return frozenset(Route) - ADMIN_ONLY
    return PUBLIC_READS


def admit(caller: Caller, route: Route) -> None:
    """What the edge authorizer decides, for a request that none checked (the HTTP API runs
    none; a REST route without one): 401 for an anonymous caller, 403 for a player, on a
    route its role can never call, before the function parses anything. ``require``
    decides the rest, as behind the edge."""
    if route in reachable(caller.role):
        return
    if caller.role is Role.ANONYMOUS:
        raise Unauthorized("this request needs a bearer token (Authorization: Bearer <token>)")
    raise Forbidden(f"only an admin may {route.value}")


def needs_board(caller: Caller, route: Route) -> bool:
    """Whether ``require`` needs the board's policy to decide for this caller."""
    if caller.is_admin:
        return False
    if caller.role is Role.ANONYMOUS:
        return route in PUBLIC_READS
    return route in CLIENT_WRITES


def require(
    caller: Caller,
    route: Route,
    *,
    board: BoardPolicy | None = None,
    members: Iterable[str] = (),
    admin_fields: Iterable[str] = (),
) -> None:
    """Raise ``Unauthorized`` or ``Forbidden`` unless ``caller`` may make this request.

    ``board`` is the board's policy (None: the board does not exist, which an anonymous
    caller is not told); ``members`` the memberIds the request acts for (the path's, or
    every event's); ``admin_fields`` the fields of the body that only an admin may set."""
    if caller.is_admin:
        return
    if caller.role is Role.ANONYMOUS:
        if route in PUBLIC_READS and board is not None and board.public_read:
            return
        raise Unauthorized(
            "this request needs a bearer token (Authorization: Bearer <token>)"
            + ("; the board is not publicly readable" if route in PUBLIC_READS else "")
        )
    if route in PLAYER_READS:
        return
    if route in ADMIN_ONLY:
        raise Forbidden(f"only an admin may {route.value}")
    others = sorted({member for member in members if member != caller.member_id})
    if caller.member_id is None or others:
        whose = ", ".join(others) if others else "any member"
        raise Forbidden(f"a player may act only for itself, not for {whose}")
    if route in OWN_ONLY:
        return
    if board is None:
        raise NotFound("the board does not exist")
    if not board.client_writes:
        raise Forbidden("this board takes writes from admins only (its clientWrites is false)")
    require_fields(caller, admin_fields)


def require_fields(caller: Caller, admin_fields: Iterable[str]) -> None:
    """403 unless ``caller`` may set ``admin_fields``: a handler that learns them from the
    body it parses after ``require`` asks this then."""
    fields = sorted(set(admin_fields))
    if fields and not caller.is_admin:
        raise Forbidden(f"only an admin may set {', '.join(fields)}")
