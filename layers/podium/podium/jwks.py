"""Fetching a token issuer's signing keys (its JWKS), carefully: the keys decide who may
call, so they come over https only (plain http only from an issuer on this machine's
loopback, as the local stack's), no redirect is followed, at most ``MAX_DOCUMENT_BYTES``
are read, and a key set found through the issuer's OpenID configuration must be on the
issuer's own origin (an ``AUTH_JWKS_URL`` set by the deploy may be elsewhere, over https).
Any failure raises: ``podium.tokens.KeySet`` keeps the keys it has and retries soon."""

from __future__ import annotations

import ipaddress
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from functools import cache
from typing import Any
from urllib.parse import urlsplit

FETCH_TIMEOUT_SECONDS = 5.0
MAX_DOCUMENT_BYTES = 512 * 1024  # a JWKS of a few keys is a few KiB
DEFAULT_PORTS = {"https": 443, "http": 80}


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        raise urllib.error.HTTPError(req.full_url, code, f"{code} redirect not followed", headers, fp)


@cache
def _opener() -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(_NoRedirects)


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_url(url: str) -> None:
    """Raise ``ValueError`` unless ``url`` is https, or http to a loopback host."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if host and (parts.scheme == "https" or (parts.scheme == "http" and _is_loopback(host))):
        return
    raise ValueError(f"the issuer's keys are fetched over https only (http from loopback), not {url!r}")


def origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return parts.scheme, parts.hostname or "", parts.port or DEFAULT_PORTS.get(parts.scheme)


def fetch_json(url: str) -> dict[str, Any]:
    """GET a JSON object (the issuer's JWKS or its OpenID configuration)."""
    check_url(url)
    with _opener().open(url, timeout=FETCH_TIMEOUT_SECONDS) as response:
        body = response.read(MAX_DOCUMENT_BYTES + 1)
    if len(body) > MAX_DOCUMENT_BYTES:
        raise ValueError(f"{url} answered more than {MAX_DOCUMENT_BYTES} bytes")
    document = json.loads(body)
    if not isinstance(document, dict):
        raise ValueError(f"{url} answered JSON that is not an object")
    return document


def key_set_fetcher(issuer: str, jwks_url: str) -> Callable[[], dict[str, Any]]:
    """What fetches the issuer's key set: from ``jwks_url`` when the deploy names it, else
    from the ``jwks_uri`` of the issuer's OpenID configuration, which must be the
    configuration of this issuer and name keys on its origin."""

    def fetch() -> dict[str, Any]:
        url = jwks_url
        if not url:
            configuration = fetch_json(f"{issuer}/.well-known/openid-configuration")
            if configuration.get("issuer") != issuer:
                raise ValueError("the OpenID configuration is another issuer's")
            named = configuration.get("jwks_uri")
            if not isinstance(named, str) or origin(named) != origin(issuer):
                raise ValueError(f"the jwks_uri {named!r} is not on the issuer's origin")
            url = named
        return fetch_json(url)

    return fetch
