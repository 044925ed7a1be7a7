"""The local stack's own token issuer: an RSA key made when the stack starts, published as a
JWKS (and an OpenID configuration) the way Cognito publishes its pool's keys, and
``POST /_local/token``, which mints admin and player tokens for trying the API by hand and
for tests. It exists only in the local stack."""

from __future__ import annotations

import json
import secrets
import time
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from podium.access import ADMIN_SCOPE
from podium.tokens import b64url_encode

PREFIX = "/_local"
TOKEN_PATH = f"{PREFIX}/token"
JWKS_PATH = f"{PREFIX}/.well-known/jwks.json"
DISCOVERY_PATH = f"{PREFIX}/.well-known/openid-configuration"
AUDIENCE = "podium-local"
DEFAULT_EXPIRES_IN = 3600
MAX_EXPIRES_IN = 7 * 24 * 3600  # a negative expiresIn mints a token that has expired (tests)

Answer = tuple[int, dict[str, str], bytes]


def _json(status: int, body: Any) -> Answer:
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


def _refused(message: str) -> Answer:
    return _json(400, {"code": "ValidationError", "message": message})


class LocalIssuer:
    def __init__(self, base_url: str) -> None:
        self.url = f"{base_url.rstrip('/')}{PREFIX}"
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = secrets.token_hex(8)

    @property
    def environment(self) -> dict[str, str]:
        """What the functions need to check this issuer's tokens."""
        return {
            "AUTH_ISSUER": self.url,
            "AUTH_AUDIENCE": AUDIENCE,
            "AUTH_MEMBER_CLAIM": "sub",
            "AUTH_JWKS_URL": f"{self.url}/.well-known/jwks.json",
        }

    def jwks(self) -> dict[str, Any]:
        numbers = self.key.public_key().public_numbers()

        def encode(value: int) -> str:
            return b64url_encode(value.to_bytes((value.bit_length() + 7) // 8, "big"))

        jwk = {"kty": "RSA", "use": "sig", "alg": "RS256", "kid": self.kid}
        return {"keys": [{**jwk, "n": encode(numbers.n), "e": encode(numbers.e)}]}

    def sign(self, claims: dict[str, Any], header: dict[str, Any] | None = None) -> str:
        head = header or {"alg": "RS256", "typ": "JWT", "kid": self.kid}
        signing_input = ".".join(
            b64url_encode(json.dumps(part, separators=(",", ":")).encode()) for part in (head, claims)
        )
        signature = self.key.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{b64url_encode(signature)}"

    def claims(self, role: str, member_id: str | None, expires_in: int) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {"iss": self.url, "aud": AUDIENCE, "iat": now, "exp": now + expires_in}
        if role == "admin":
            return {**claims, "sub": "local-admin", "scope": ADMIN_SCOPE}
        return {**claims, "sub": member_id}

    def mint(self, body: bytes) -> Answer:
        """``POST /_local/token`` with ``{"role": "admin"}`` or ``{"role": "player",
        "memberId": "alice"}``, optionally ``"expiresIn": seconds``."""
        try:
            request = json.loads(body or b"{}")
        except ValueError:
            return _refused("the body is not valid JSON")
        if not isinstance(request, dict):
            return _refused("the body must be a JSON object")
        unknown = sorted(set(request) - {"role", "memberId", "expiresIn"})
        if unknown:
            return _refused(f"unknown field {unknown[0]!r}; the fields allowed are role, memberId, expiresIn")
        role, member_id = request.get("role"), request.get("memberId")
        if role not in ("admin", "player"):
            return _refused("role must be admin or player")
        if role == "player" and not isinstance(member_id, str):
            return _refused("a player token needs memberId, the member it acts as")
        if role == "admin" and member_id is not None:
            return _refused("an admin token has no memberId")
        expires_in = request.get("expiresIn", DEFAULT_EXPIRES_IN)
        if (
            isinstance(expires_in, bool)
            or not isinstance(expires_in, int)
            or abs(expires_in) > MAX_EXPIRES_IN
        ):
            return _refused(
                f"expiresIn must be a whole number of seconds from -{MAX_EXPIRES_IN} to {MAX_EXPIRES_IN}"
            )
        return _json(200, {"token": self.sign(self.claims(role, member_id, expires_in))})

    def handle(self, method: str, path: str, body: bytes) -> Answer | None:
        """The issuer's answer to a request for one of its paths; None for any other path."""
        if path == TOKEN_PATH:
            return self.mint(body) if method == "POST" else _refused("POST a body to mint a token")
        if path == JWKS_PATH and method == "GET":
            return _json(200, self.jwks())
        if path == DISCOVERY_PATH and method == "GET":
            return _json(200, {"issuer": self.url, "jwks_uri": f"{self.url}/.well-known/jwks.json"})
        return None
