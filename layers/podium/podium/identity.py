"""Who is calling: from the edge authorizer's verdict when API Gateway ran one, else from
the request's own bearer token (the read routes that a publicRead board serves without
one), else nobody. The verifier, with the issuer's keys, is built once per process."""

from __future__ import annotations

import time
from collections.abc import Mapping
from functools import cache
from typing import Any

from podium import access, jwks, tokens, validation
from podium.access import Caller, Role
from podium.config import settings
from podium.errors import Unauthorized, ValidationError

BEARER = "bearer "


@cache
def verifier() -> tokens.Verifier:
    config = settings()
    if not config.auth_audiences:
        raise Unauthorized("the service has no audience configured (AUTH_AUDIENCE): no token can be accepted")
    return tokens.Verifier(
        config.auth_issuer,
        frozenset(config.auth_audiences),
        tokens.KeySet(jwks.key_set_fetcher(config.auth_issuer, config.auth_jwks_url)),
        token_use=config.auth_token_use,
    )


def _is_member_id(text: str) -> bool:
    try:
        validation.member_id(text)
    except ValidationError:
        return False
    return True


def bearer_token(headers: Mapping[str, str]) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header; None with no header;
    401 for a header of another scheme."""
    value = next((v for k, v in headers.items() if k.lower() == "authorization"), None)
    if value is None:
        return None
    if not value.lower().startswith(BEARER) or not value[len(BEARER) :].strip():
        raise Unauthorized("the Authorization header must be 'Bearer <token>'")
    return value[len(BEARER) :].strip()


def caller_from_token(token: str) -> tuple[Caller, int]:
    """The caller a valid token identifies, and when the token expires (epoch seconds)."""
    claims = verifier().verify(token)
    caller = access.caller_from_claims(claims, settings().auth_member_claim, _is_member_id)
    return caller, int(claims["exp"])


def caller_of(headers: Mapping[str, str], authorizer: Mapping[str, Any] | None) -> Caller:
    """The caller of a request, by the edge authorizer's context when there is one."""
    if not settings().auth_enabled:
        return access.ADMIN
    if authorizer and "role" in authorizer:
        # Set by API Gateway from the authorizer's answer, which it may cache for a few
        # minutes: a token that has expired since is refused here.
        if time.time() > float(authorizer.get("expiresAt") or 0) + tokens.DEFAULT_LEEWAY_SECONDS:
            raise Unauthorized("the token has expired")
        return Caller(Role(str(authorizer["role"])), str(authorizer.get("memberId") or "") or None)
    token = bearer_token(headers)
    if token is None:
        return access.ANONYMOUS
    return caller_from_token(token)[0]
