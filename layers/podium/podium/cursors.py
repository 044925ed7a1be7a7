"""One codec for the cursor of every paged route: a position in a listing (a sort key, a
board id), tied to the listing it came from (its *scope*: a board and period, a board's
inbox, the catalog). Opaque to clients: base64url of a small JSON object, then ``.`` and
an HMAC-SHA256 of it (16 bytes) under the stack's cursor key, so that an edited cursor is
400 rather than a page from a position the service never handed out.

A cursor says only where the next page starts; everything a page shows (ranks above all)
is read when the page is."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re

from podium.config import settings
from podium.errors import ValidationError

INVALID = "cursor is not valid: pass the nextCursor of a previous page"
MAX_LENGTH = 2048  # far above any position a listing hands out


SIGNATURE_BYTES = 16


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _signature(payload: str) -> str:
    key = settings().cursor_secret.encode("utf-8")
    return _b64(hmac.new(key, payload.encode("ascii"), hashlib.sha256).digest()[:SIGNATURE_BYTES])


def _signature_of(payload: str) -> bytes:
    if not payload.isascii():
        return b""  # no signature matches: the cursor is refused
    return _signature(payload).encode("ascii")


def encode(scope: str, position: str) -> str:
    raw = json.dumps({"s": scope, "p": position}, separators=(",", ":"))
    payload = _b64(raw.encode("utf-8"))
    return f"{payload}.{_signature(payload)}"


def decode(text: str, scope: str, position: re.Pattern[str] | None = None) -> str:
    """The position a cursor of listing ``scope`` holds; 400 for anything else (a cursor
    of another listing, or one whose position does not match ``position``)."""
    if len(text) > MAX_LENGTH:
        raise ValidationError(INVALID)
    payload, _, signature = text.rpartition(".")
    if not payload or not hmac.compare_digest(signature.encode("ascii", "replace"), _signature_of(payload)):
        raise ValidationError(f"{INVALID} (this one was changed, or made by another stack)")
    try:
        padded = payload + "=" * (-len(payload) % 4)
        raw = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")).decode("utf-8"))
        owner, found = raw["s"], raw["p"]
    except (ValueError, KeyError, TypeError, binascii.Error, UnicodeError) as error:
        raise ValidationError(INVALID) from error
    if not isinstance(owner, str) or not isinstance(found, str) or not found:
        raise ValidationError(INVALID)
    if owner != scope:
        raise ValidationError("cursor is not valid for this listing: it belongs to another board or period")
    if position is not None and not position.fullmatch(found):
        raise ValidationError(INVALID)
    return found
