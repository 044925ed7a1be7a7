"""Token checks (podium.tokens): tokens signed by a real RSA key (the local stack's issuer),
and every way a token can be wrong refused with 401."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from typing import Any

import pytest

from devstack.issuer import AUDIENCE, LocalIssuer
from podium.errors import Unauthorized
from podium.tokens import DEFAULT_LEEWAY_SECONDS, KeySet, Verifier, b64url_encode

ISSUER = LocalIssuer("http://127.0.0.1:1")


def verifier(issuer: LocalIssuer = ISSUER, audiences: tuple[str, ...] = (AUDIENCE,)) -> Verifier:
    return Verifier(issuer.url, frozenset(audiences), KeySet(issuer.jwks))


def claims(**changes: Any) -> dict[str, Any]:
    now = int(time.time())
    base = {"iss": ISSUER.url, "aud": AUDIENCE, "sub": "alice", "iat": now, "exp": now + 600}
    base.update(changes)
    return {name: value for name, value in base.items() if value is not None}


def test_a_token_signed_by_the_issuer_gives_its_claims() -> None:
    # Given a player's token from the issuer
    token = ISSUER.sign(claims())

    # When it is checked
    found = verifier().verify(token)

    # Then its claims come back
    assert found["sub"] == "alice"


@pytest.mark.parametrize("algorithm", ["RS384", "RS512"])
def test_the_other_rsa_digests_verify(algorithm: str) -> None:
    # Given a token signed with SHA-384 or SHA-512
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    digest = hashes.SHA384() if algorithm == "RS384" else hashes.SHA512()
    head = b64url_encode(json.dumps({"alg": algorithm, "kid": ISSUER.kid}).encode())
    body = b64url_encode(json.dumps(claims()).encode())
    signature = ISSUER.key.sign(f"{head}.{body}".encode(), padding.PKCS1v15(), digest)

    # When it is checked, then it verifies
    assert verifier().verify(f"{head}.{body}.{b64url_encode(signature)}")["sub"] == "alice"


def _forged(header: dict[str, Any], payload: dict[str, Any], signature: bytes) -> str:
    parts = [b64url_encode(json.dumps(part).encode()) for part in (header, payload)]
    return ".".join([*parts, b64url_encode(signature)])


def _tampered_payload() -> str:
    head, _, signature = ISSUER.sign(claims()).split(".")
    return f"{head}.{b64url_encode(json.dumps(claims(sub='mallory')).encode())}.{signature}"


def _flipped_signature() -> str:
    head, body, signature = ISSUER.sign(claims()).split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=="))
    raw[-1] ^= 1
    return f"{head}.{body}.{b64url_encode(bytes(raw))}"


def _hmac_with_the_public_key() -> str:
    # the classic confusion: HS256 "signed" with the public key's bytes as the secret
    key = json.dumps(ISSUER.jwks()).encode()
    header = {"alg": "HS256", "kid": ISSUER.kid}
    parts = [b64url_encode(json.dumps(part).encode()) for part in (header, claims())]
    mac = hmac.new(key, ".".join(parts).encode(), hashlib.sha256).digest()
    return ".".join([*parts, b64url_encode(mac)])


OTHER_ISSUER = LocalIssuer("http://127.0.0.1:2")

BAD_TOKENS: dict[str, Callable[[], str]] = {
    "garbage": lambda: "not-a-token",
    "two parts": lambda: "abc.def",
    "not base64": lambda: "a!b.c$d.e%f",
    "alg none": lambda: _forged({"alg": "none", "kid": ISSUER.kid}, claims(), b""),
    "hmac with the public key": _hmac_with_the_public_key,
    "tampered payload": _tampered_payload,
    "flipped signature": _flipped_signature,
    "unknown key": lambda: OTHER_ISSUER.sign(claims()),
    "expired": lambda: ISSUER.sign(claims(exp=int(time.time()) - DEFAULT_LEEWAY_SECONDS - 5)),
    "no expiry": lambda: ISSUER.sign(claims(exp=None)),
    "not valid yet": lambda: ISSUER.sign(claims(nbf=int(time.time()) + DEFAULT_LEEWAY_SECONDS + 60)),
    "wrong issuer": lambda: ISSUER.sign(claims(iss="https://elsewhere.example")),
    "wrong audience": lambda: ISSUER.sign(claims(aud="another-app")),
    "no audience": lambda: ISSUER.sign(claims(aud=None)),
}


@pytest.mark.parametrize("kind", sorted(BAD_TOKENS))
def test_a_bad_token_is_refused(kind: str) -> None:
    # Given a token that is wrong in one way
    token = BAD_TOKENS[kind]()

    # When it is checked, then it is refused (401)
    with pytest.raises(Unauthorized) as refused:
        verifier().verify(token)
    assert refused.value.status == 401


def test_clock_skew_within_the_leeway_is_allowed() -> None:
    # Given a token that expired a few seconds ago (clocks differ)
    token = ISSUER.sign(claims(exp=int(time.time()) - 5))

    # When it is checked, then it still passes
    assert verifier().verify(token)["sub"] == "alice"


def test_a_cognito_access_token_is_matched_by_its_client_id() -> None:
    # Given an access token as Cognito issues it: no aud, the app client in client_id
    token = ISSUER.sign(claims(aud=None, client_id="game-server-client", scope="podium/admin"))

    # When our audiences name that app client, then it verifies; else it is refused
    assert verifier(audiences=("game-server-client",)).verify(token)["scope"] == "podium/admin"
    with pytest.raises(Unauthorized):
        verifier(audiences=("player-client",)).verify(token)


def test_keys_are_fetched_once_and_again_only_for_an_unknown_key() -> None:
    # Given a key set that counts its fetches
    fetches: list[float] = []
    now = [0.0]

    def fetch() -> dict[str, Any]:
        fetches.append(now[0])
        return ISSUER.jwks()

    keys = KeySet(fetch, monotonic=lambda: now[0])
    checker = Verifier(ISSUER.url, frozenset({AUDIENCE}), keys)

    # When many tokens are checked, and junk names unknown keys again and again
    for _ in range(5):
        checker.verify(ISSUER.sign(claims()))
    for _ in range(5):
        with pytest.raises(Unauthorized):
            checker.verify(OTHER_ISSUER.sign(claims()))
    now[0] = 61.0
    with pytest.raises(Unauthorized):
        checker.verify(OTHER_ISSUER.sign(claims()))

    # Then the issuer was asked once at first, and once more a minute later (a rotation)
    assert fetches == [0.0, 61.0]


# -- tokens that cannot be read, and claims of the wrong type: 401, never anything else ----


def _signed_raw(payload: bytes, header: dict[str, Any] | None = None) -> str:
    """A token whose payload is ``payload`` as it is (not necessarily JSON), signed by the
    issuer: what only a broken or hostile issuer would send, read after the signature."""
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding

    head = b64url_encode(json.dumps(header or {"alg": "RS256", "kid": ISSUER.kid}).encode())
    body = b64url_encode(payload)
    signature = ISSUER.key.sign(f"{head}.{body}".encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{head}.{body}.{b64url_encode(signature)}"


def _with_part(index: int, text: str) -> str:
    parts = ISSUER.sign(claims()).split(".")
    parts[index] = text
    return ".".join(parts)


UNREADABLE_TOKENS: dict[str, Callable[[], str]] = {
    "signature of 4n+1 characters": lambda: _with_part(2, "A" * 341),
    "header of 4n+1 characters": lambda: _with_part(0, "eyJhb"),
    "payload of 4n+1 characters": lambda: _with_part(1, "eyJhb"),
    "payload not ascii": lambda: _with_part(1, "eyJzdWIiOiJhbGljZSJ9é"),
    "signature not ascii": lambda: _with_part(2, "ü" * 8),
    "header not ascii": lambda: _with_part(0, "ëyJ"),
    "empty parts": lambda: "..",
    "header nested deeper than the parser goes": lambda: _with_part(0, b64url_encode(b"[" * 100_000)),
    "payload not JSON": lambda: _signed_raw(b"alice"),
    "payload not UTF-8": lambda: _signed_raw(b'{"sub": "\xff\xfe"}'),
    "payload not an object": lambda: _signed_raw(b"[1, 2]"),
    "payload nested deeper than the parser goes": lambda: _signed_raw(b'{"a":' * 100_000),
    "header not an object": lambda: _with_part(0, b64url_encode(b'"RS256"')),
    "kid not a string": lambda: ISSUER.sign(claims(), header={"alg": "RS256", "kid": 7}),
    "alg not a string": lambda: ISSUER.sign(claims(), header={"alg": ["RS256"], "kid": ISSUER.kid}),
}

NOW = int(time.time())
WRONG_TYPES: dict[str, dict[str, Any]] = {
    "exp NaN": {"exp": float("nan")},
    "exp Infinity": {"exp": float("inf")},
    "exp -Infinity": {"exp": float("-inf")},
    "exp a string": {"exp": str(NOW + 600)},
    "exp a bool": {"exp": True},
    "exp beyond any date": {"exp": 10**400},
    "exp a list": {"exp": [NOW + 600]},
    "nbf a string": {"nbf": "0"},
    "nbf NaN": {"nbf": float("nan")},
    "nbf a bool": {"nbf": False},
    "nbf null": {"nbf": None},
    "iat a string": {"iat": "now"},
    "iat Infinity": {"iat": float("inf")},
    "iat an object": {"iat": {}},
    "scope a list": {"scope": ["podium/admin"]},
    "scope a number": {"scope": 5},
    "scp a string": {"scp": "podium/admin"},
    "scp of numbers": {"scp": [5]},
    "sub a number": {"sub": 5},
    "sub a list": {"sub": ["alice"]},
    "client_id a number": {"client_id": 5},
    "token_use a list": {"token_use": ["access"]},
}


def _claims_with(wrong: dict[str, Any]) -> dict[str, Any]:
    found = claims()
    found.update(wrong)  # None stays: a claim of JSON null
    return found


def _signed_with(wrong: dict[str, Any]) -> Callable[[], str]:
    return lambda: ISSUER.sign(_claims_with(wrong))


ALL_UNREADABLE: dict[str, Callable[[], str]] = {
    **UNREADABLE_TOKENS,
    **{f"claim {kind}": _signed_with(wrong) for kind, wrong in WRONG_TYPES.items()},
}


@pytest.mark.parametrize("kind", sorted(ALL_UNREADABLE))
def test_a_token_that_cannot_be_read_is_401(kind: str) -> None:
    # Given a token that cannot be read, or whose claim has the wrong type
    token = ALL_UNREADABLE[kind]()

    # When it is checked, then it is refused as 401, with no other exception
    with pytest.raises(Unauthorized) as refused:
        verifier().verify(token)
    assert refused.value.status == 401


@pytest.mark.parametrize("kind", sorted(ALL_UNREADABLE))
def test_the_authorizer_and_the_functions_answer_401_for_a_token_that_cannot_be_read(
    kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given the service's verifier (no issuer to fetch from: the test issuer's keys)
    from podium import authorizer, identity

    checker = verifier()
    monkeypatch.setattr(identity, "verifier", lambda: checker)
    headers = {"Authorization": f"Bearer {ALL_UNREADABLE[kind]()}"}

    # When the edge authorizer checks it, then it answers API Gateway's 401 and nothing else
    event = {"methodArn": "arn:aws:execute-api:us-east-1:1:api/dev/GET/boards", "headers": headers}
    with pytest.raises(authorizer.Refused, match=r"^Unauthorized$"):
        authorizer.authorize(event)

    # And a function that checks it itself (a publicRead route) answers 401
    with pytest.raises(Unauthorized):
        identity.caller_from_token(ALL_UNREADABLE[kind]())


def test_a_claim_of_the_right_types_still_passes() -> None:
    # Given a token with every typed claim, each of its right type
    token = ISSUER.sign(claims(nbf=NOW - 10, iat=NOW - 10.5, scope="openid", scp=["x"], client_id="c"))

    # When it is checked, then it verifies
    assert verifier().verify(token)["sub"] == "alice"


def test_random_mutations_of_a_token_are_refused_as_401_only() -> None:
    # Given a good token, changed at random places to random characters
    import random

    rng = random.Random(26)
    good = ISSUER.sign(claims())
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/é\x00 "
    checker = verifier()
    for _ in range(300):
        chars = list(good)
        for _ in range(rng.randint(1, 4)):
            position = rng.randrange(len(chars) + 1)
            action = rng.choice(("replace", "insert", "delete"))
            if action == "insert" or position == len(chars):
                chars.insert(position, rng.choice(alphabet))
            elif action == "replace":
                chars[position] = rng.choice(alphabet)
            else:
                del chars[position]
        token = "".join(chars)
        if token == good:
            continue

        # When it is checked, then it passes (a change the decoder ignores) or is 401:
        # any other exception fails the test
        with contextlib.suppress(Unauthorized):
            checker.verify(token)


# -- Cognito: access tokens only -----------------------------------------------------------


@pytest.mark.parametrize("token_use", ["id", None, "refresh"])
def test_with_token_use_access_an_id_token_is_refused(token_use: str | None) -> None:
    # Given a verifier for the stack's Cognito pool (access tokens only), and a token that
    # is an ID token (its aud the app client; it carries attributes the user may change)
    checker = Verifier(ISSUER.url, frozenset({AUDIENCE}), KeySet(ISSUER.jwks), token_use="access")
    token = ISSUER.sign(claims(token_use=token_use, email="mallory@example.com"))

    # When it is checked, then it is refused, naming token_use
    with pytest.raises(Unauthorized, match="token_use"):
        checker.verify(token)

    # And the pool's access token passes
    assert checker.verify(ISSUER.sign(claims(token_use="access")))["sub"] == "alice"


def test_the_services_verifier_takes_access_tokens_only_from_a_cognito_pool(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from podium import identity, wiring

    # Given the stack's own Cognito pool as the issuer
    monkeypatch.setenv("AUTH_ISSUER", "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Ab12Cd")
    monkeypatch.setenv("AUTH_AUDIENCE", "player-client")
    wiring.reset()
    try:
        # When the service builds its verifier, then it requires token_use access
        assert identity.verifier().token_use == "access"
    finally:
        wiring.reset()
