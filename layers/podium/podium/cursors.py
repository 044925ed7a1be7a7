"""One codec for the cursor of every paged route: a position in a listing (a sort key, a
board id), tied to the listing it came from (its *scope*: a board and period, a board's
inbox, the catalog). Opaque to clients: ``<payload>.<key id>.<signature>``, the payload
being base64url of a small JSON object, and the signature an HMAC-SHA256 (16 bytes) of
``<key id>.<payload>`` under the cursor key that id names (``podium.cursorkeys``: two keys
are accepted while one replaces the other). An edited cursor, one without a signature, or
one whose key was dropped is 400 rather than a page from a position the service never
handed out.

A cursor says only where the next page starts; everything a page shows (ranks above all)
is read when the page is."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re

from podium import cursorkeys
from podium.cursorkeys import CursorKey
from podium.errors import ValidationError

INVALID = "cursor is not valid: pass the nextCursor of a previous page"
MAX_LENGTH = 2048  # far above any position a listing hands out


SIGNATURE_BYTES = 16


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _signature(key: CursorKey, payload: str) -> bytes:
    signed = f"{key.key_id}.{payload}".encode("ascii")
    return _b64(hmac.new(key.secret, signed, hashlib.sha256).digest()[:SIGNATURE_BYTES]).encode("ascii")


def encode(scope: str, position: str) -> str:
    return sign_with(cursorkeys.source().ring().current, scope, position)


def sign_with(key: CursorKey, scope: str, position: str) -> str:
    """The cursor of ``position`` in listing ``scope``, signed with ``key``."""
    raw = json.dumps({"s": scope, "p": position}, separators=(",", ":"))
    payload = _b64(raw.encode("utf-8"))
    return f"{payload}.{key.key_id}.{_signature(key, payload).decode('ascii')}"


def _verified_payload(text: str) -> str:
    """The payload of a cursor whose signature is one of the accepted keys'; 400 otherwise."""
    if len(text) > MAX_LENGTH or not text.isascii():
        raise ValidationError(INVALID)
    parts = text.split(".")
    if len(parts) != 3 or not parts[0]:
        raise ValidationError(f"{INVALID} (it needs a key id and a signature)")
    payload, key_id, signature = parts
    # compare_digest(b"", b"") is True: an empty signature is refused before any comparison
    if not signature:
        raise ValidationError(f"{INVALID} (its signature is missing)")
    if not cursorkeys.KEY_ID.fullmatch(key_id):
        raise ValidationError(f"{INVALID} (its key id is missing or malformed)")
    key = cursorkeys.source().find(key_id)
    if key is None:
        raise ValidationError(f"{INVALID} (its key is no longer accepted, or it was made by another stack)")
    if not hmac.compare_digest(signature.encode("ascii"), _signature(key, payload)):
        raise ValidationError(f"{INVALID} (this one was changed, or made by another stack)")
    return payload


def decode(text: str, scope: str, position: re.Pattern[str] | None = None) -> str:
    """The position a cursor of listing ``scope`` holds; 400 for anything else (a cursor
    of another listing, or one whose position does not match ``position``)."""
    payload = _verified_payload(text)
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
