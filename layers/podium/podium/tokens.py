"""Checking a caller's JWT bearer token: its RSA signature against the issuer's published
keys (JWKS: ``KeySet`` says when they are fetched again; ``podium.jwks`` how), then its
issuer, audience and lifetime, with a small allowance for clock skew, and the types of the
claims the service reads. A token that cannot be read is 401, whatever is wrong with it.

Only RS256, RS384 and RS512 are accepted: asymmetric algorithms, what Cognito and the
usual OpenID Connect issuers sign with. ``none`` and the HMAC family are refused whatever
the key says (an HMAC "signature" made with the public key as its secret is the classic
forgery). The check is written here, in the standard library (RSASSA-PKCS1-v1_5 by the
encode-and-compare method of RFC 8017, section 8.2.2), so that no cryptography package
with native code has to ship in the layer or load at a cold start.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from podium.errors import IssuerUnavailable, Unauthorized
from podium.log import logger
from podium.values import frozen

# DER encodings of DigestInfo's AlgorithmIdentifier, RFC 8017 section 9.2, note 1.
_DIGEST_INFO = {
    "RS256": ("sha256", bytes.fromhex("3031300d060960864801650304020105000420")),
    "RS384": ("sha384", bytes.fromhex("3041300d060960864801650304020205000430")),
    "RS512": ("sha512", bytes.fromhex("3051300d060960864801650304020305000440")),
}
ALGORITHMS = tuple(_DIGEST_INFO)
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
DEFAULT_LEEWAY_SECONDS = 60
MIN_MODULUS_BITS = 2048
KEYS_MAX_AGE_SECONDS = 3600  # the keys are fetched again at least this often
UNKNOWN_KID_REFETCH_SECONDS = 60  # a token naming an unknown key fetches them at most this often
RETRY_SECONDS = 5  # after a failed fetch, the next waits this long: soon, yet sparing the issuer
STALE_KEYS_SECONDS = 24 * 3600  # while the issuer is down, the keys fetched before serve this long


def b64url_decode(text: str) -> bytes:
    # 4n+1 characters hold no whole byte in their last character: no encoder makes them.
    if not _BASE64URL.fullmatch(text) or len(text) % 4 == 1:
        raise Unauthorized("the token is malformed: not three base64url parts")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error:
        raise Unauthorized("the token is malformed: not three base64url parts") from None


def b64url_encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _json_part(text: str, what: str) -> dict[str, Any]:
    try:
        value = json.loads(b64url_decode(text))
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise Unauthorized(f"the token is malformed: its {what} is not JSON") from None
    if not isinstance(value, dict):
        raise Unauthorized(f"the token is malformed: its {what} is not a JSON object")
    return value


@frozen
class RsaKey:
    """An RSA public key from a JWKS: modulus ``n`` and exponent ``e``."""

    n: int
    e: int

    @classmethod
    def from_jwk(cls, jwk: Mapping[str, Any]) -> RsaKey:
        n = int.from_bytes(b64url_decode(str(jwk["n"])), "big")
        e = int.from_bytes(b64url_decode(str(jwk["e"])), "big")
        if n.bit_length() < MIN_MODULUS_BITS or e < 3 or e % 2 == 0:
            raise ValueError("RSA key too small or with a bad exponent")
        return cls(n, e)

    def verifies(self, algorithm: str, message: bytes, signature: bytes) -> bool:
        """RSASSA-PKCS1-v1_5 verification: raise the signature to ``e`` and compare the
        result, byte for byte, with the padding and DigestInfo that ``message`` should give."""
        hash_name, prefix = _DIGEST_INFO[algorithm]
        size = (self.n.bit_length() + 7) // 8
        if len(signature) != size:
            return False
        s = int.from_bytes(signature, "big")
        if s >= self.n:
            return False
        encoded = pow(s, self.e, self.n).to_bytes(size, "big")
        digest_info = prefix + hashlib.new(hash_name, message).digest()
        padding = size - len(digest_info) - 3
        if padding < 8:
            return False
        expected = b"\x00\x01" + b"\xff" * padding + b"\x00" + digest_info
        return hmac.compare_digest(encoded, expected)


KeyFetcher = Callable[[], Any]  # the issuer's JWKS document (podium.jwks.key_set_fetcher)


class KeySet:
    """The issuer's signing keys by ``kid``, kept by the process (a Lambda instance keeps
    them across invocations) and fetched again:

    - on a timer, ``KEYS_MAX_AGE_SECONDS`` after the last fetch, so that a key the issuer
      has removed stops being trusted within the hour;
    - for a token that names a key not seen, at most every ``UNKNOWN_KID_REFETCH_SECONDS``
      (how a rotation's new key is picked up, without letting junk tokens hammer the issuer);
    - after a failed fetch, at most every ``RETRY_SECONDS``: soon after the issuer is back.

    While the issuer cannot be reached, the keys fetched before serve for up to
    ``STALE_KEYS_SECONDS``; a key that is not among them then raises ``IssuerUnavailable``
    (500, retryable): whether it is good cannot be told, and the token is not at fault."""

    def __init__(self, fetch: KeyFetcher, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._fetch = fetch
        self._monotonic = monotonic
        self._keys: dict[str, RsaKey] = {}
        self._fetched_at: float | None = None  # the last fetch that succeeded
        self._tried_at: float | None = None  # the last fetch, whatever its outcome
        self._failure: str | None = None  # why the last fetch failed; None when it did not
        self._lock = threading.Lock()

    def key(self, kid: str) -> RsaKey | None:
        """The key ``kid``; None when the issuer (just asked) does not publish it."""
        with self._lock:
            now = self._monotonic()
            if self._due(now, unknown=kid not in self._keys):
                self._refresh(now)
            usable = self._fetched_at is not None and now - self._fetched_at < STALE_KEYS_SECONDS
            found = self._keys.get(kid) if usable else None
            if found is None and self._failure is not None:
                raise IssuerUnavailable(
                    f"the token could not be checked: the issuer's signing keys could not be "
                    f"fetched ({self._failure}); retry"
                )
            return found

    def _due(self, now: float, unknown: bool) -> bool:
        if self._tried_at is None:
            return True
        since = now - self._tried_at
        if self._failure is not None:
            return since >= RETRY_SECONDS
        return since >= KEYS_MAX_AGE_SECONDS or (unknown and since >= UNKNOWN_KID_REFETCH_SECONDS)

    def _refresh(self, now: float) -> None:
        self._tried_at = now
        try:
            document = self._fetch()
            listed = document.get("keys") if isinstance(document, dict) else None
            if not isinstance(listed, list):
                raise ValueError("the document is not a key set (JWKS)")
        except Exception as error:  # the issuer is down, or answers nonsense: kept keys serve
            self._failure = type(error).__name__
            logger.warning("the issuer's signing keys could not be fetched", extra={"error": str(error)})
            return
        keys: dict[str, RsaKey] = {}
        for jwk in listed:
            if not isinstance(jwk, dict):
                continue
            if jwk.get("kty") != "RSA" or jwk.get("use", "sig") != "sig" or "kid" not in jwk:
                continue
            try:
                keys[str(jwk["kid"])] = RsaKey.from_jwk(jwk)
            except (KeyError, ValueError, Unauthorized):
                continue  # one unusable key does not hide the others
        self._keys, self._fetched_at, self._failure = keys, now, None


# Claims whose type the service relies on: a token that has one of another type is refused
# (401), never read as if the claim were absent.
DATE_CLAIMS = ("exp", "nbf", "iat")
STRING_CLAIMS = ("sub", "scope", "client_id", "token_use", "username")
LIST_OF_STRINGS_CLAIMS = ("scp",)
LATEST_DATE = 253402300799  # 9999-12-31T23:59:59Z: a NumericDate past it is not a date


def numeric_date(claims: Mapping[str, Any], name: str) -> float | None:
    """A NumericDate claim (RFC 7519: seconds since 1970, maybe fractional): None when
    absent; 401 when it is there and not a finite number of seconds (NaN, Infinity, a
    string, a bool, null, a number beyond year 9999)."""
    if name not in claims:
        return None
    value = claims[name]
    # NaN fails every comparison, so the bounds refuse it with the infinities.
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= LATEST_DATE:
        raise Unauthorized(f"the token's {name} is not a date (a number of seconds since 1970)")
    return float(value)


def _check_types(claims: Mapping[str, Any]) -> None:
    for name in DATE_CLAIMS:
        numeric_date(claims, name)
    for name in STRING_CLAIMS:
        if name in claims and not isinstance(claims[name], str):
            raise Unauthorized(f"the token's {name} claim is not a string")
    for name in LIST_OF_STRINGS_CLAIMS:
        value = claims.get(name, [])
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise Unauthorized(f"the token's {name} claim is not a list of strings")


@frozen
class Verifier:
    """Checks a token's signature and claims; ``verify`` answers its claims or raises
    ``Unauthorized`` saying what was wrong."""

    issuer: str
    audiences: frozenset[str]
    keys: KeySet
    leeway_seconds: int = DEFAULT_LEEWAY_SECONDS
    clock: Callable[[], float] = time.time
    # What a token's token_use must say ("access" for the stack's Cognito pool); None: any.
    token_use: str | None = None

    def verify(self, token: str) -> dict[str, Any]:
        parts = token.split(".")
        if len(parts) != 3 or not all(_BASE64URL.fullmatch(part) for part in parts):
            raise Unauthorized("the token is malformed: not three base64url parts")
        header = _json_part(parts[0], "header")
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise Unauthorized(
                f"the token's algorithm {algorithm!r} is not accepted: use one of {', '.join(ALGORITHMS)}"
            )
        kid = header.get("kid")
        if not isinstance(kid, str):
            raise Unauthorized("the token names no signing key (kid)")
        key = self.keys.key(kid)
        if key is None:
            raise Unauthorized(f"the token is signed with key {kid!r}, which the issuer does not publish")
        if not key.verifies(algorithm, f"{parts[0]}.{parts[1]}".encode("ascii"), b64url_decode(parts[2])):
            raise Unauthorized("the token's signature does not match")
        claims = _json_part(parts[1], "payload")
        self._check_claims(claims)
        return claims

    def _check_claims(self, claims: Mapping[str, Any]) -> None:
        now = self.clock()
        if claims.get("iss") != self.issuer:
            raise Unauthorized(f"the token is from issuer {claims.get('iss')!r}, not this service's")
        _check_types(claims)
        expires = numeric_date(claims, "exp")
        if expires is None:
            raise Unauthorized("the token has no expiry (exp)")
        if now > expires + self.leeway_seconds:
            raise Unauthorized("the token has expired")
        not_before = numeric_date(claims, "nbf")
        if not_before is not None and now + self.leeway_seconds < not_before:
            raise Unauthorized("the token is not valid yet (nbf)")
        if self.token_use is not None and claims.get("token_use") != self.token_use:
            # A Cognito ID token carries attributes its user may change (email, name...).
            raise Unauthorized(f"the token's token_use is not {self.token_use!r}: send the access token")
        if not self._audience_matches(claims):
            raise Unauthorized("the token is for another audience")

    def _audience_matches(self, claims: Mapping[str, Any]) -> bool:
        """``aud`` names one of ours; or, for a Cognito access token (which has no ``aud``),
        ``client_id`` is one of our app clients."""
        audience = claims.get("aud")
        named = [audience] if isinstance(audience, str) else audience if isinstance(audience, list) else []
        if audience is None and isinstance(claims.get("client_id"), str):
            named = [claims["client_id"]]
        return any(isinstance(name, str) and name in self.audiences for name in named)
