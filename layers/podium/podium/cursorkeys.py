"""The keys that sign cursors (``podium.cursors``), as an instance keeps them.

In AWS the functions that make or read cursors get the ARN of the stack's secret
(``CURSOR_SECRET_ARN``), never the key itself, and read it from Secrets Manager at the
first cursor. The secret holds a key ring, JSON::

    {"currentId": "2", "current": "<key>", "previousId": "1", "previous": "<key>"}

New cursors are signed with ``current`` and name its id; a cursor naming ``previousId``
is still read, so that a rotation (docs/operations.md, "Rotating the cursor key") turns
no outstanding cursor into a 400. A bare string (the secret as the stack made it before
key ids) is one key of id ``0``.

An instance reads the secret again every ``REFRESH_SECONDS`` (so a dropped key is refused
everywhere within that time), and sooner when a cursor names a key it does not know (one
made by an instance that has read the rotated secret already), at most once every
``UNKNOWN_KEY_FLOOR_SECONDS``: cursors naming made-up keys cost at most that many reads.

The local stack has no Secrets Manager: it passes its key in ``CURSOR_KEY``, which only it
sets. Without either, the process makes a key of its own, valid in this instance only (the
stream consumers' and the period results' own paging, whose cursors never leave it)."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable

from podium.config import settings
from podium.values import frozen

REFRESH_SECONDS = 900.0
UNKNOWN_KEY_FLOOR_SECONDS = 60.0
KEY_ID = re.compile(r"[A-Za-z0-9_-]{1,16}")
SHAPE = 'a JSON object {"currentId", "current"[, "previousId", "previous"]} of non-empty strings'


class BadCursorSecret(RuntimeError):
    """The secret does not hold a key ring (an operator's edit gone wrong): a 500."""


@frozen
class CursorKey:
    key_id: str
    secret: bytes


@frozen
class KeyRing:
    current: CursorKey
    previous: CursorKey | None = None

    def find(self, key_id: str) -> CursorKey | None:
        for key in (self.current, self.previous):
            if key is not None and key.key_id == key_id:
                return key
        return None


def parse(text: str) -> KeyRing:
    """The key ring a secret's value holds."""
    if not text.strip():
        raise BadCursorSecret(f"the cursor secret is empty: it must be {SHAPE}")
    if not text.lstrip().startswith("{"):
        return KeyRing(CursorKey("0", text.encode("utf-8")))
    try:
        raw = json.loads(text)
    except ValueError:
        raise BadCursorSecret(f"the cursor secret is not JSON: it must be {SHAPE}") from None
    current = _key(raw, "current")
    if current is None:
        raise BadCursorSecret(f"the cursor secret has no currentId and current: it must be {SHAPE}")
    previous = _key(raw, "previous")
    if previous is not None and previous.key_id == current.key_id:
        raise BadCursorSecret("the cursor secret's previousId must differ from its currentId")
    return KeyRing(current, previous)


def _key(raw: dict[str, object], name: str) -> CursorKey | None:
    key_id, secret = raw.get(f"{name}Id"), raw.get(name)
    if key_id is None and secret is None:
        return None
    if not isinstance(key_id, str) or not KEY_ID.fullmatch(key_id):
        raise BadCursorSecret(f"the cursor secret's {name}Id must match {KEY_ID.pattern}, not {key_id!r}")
    if not isinstance(secret, str) or not secret:
        raise BadCursorSecret(f"the cursor secret's {name} must be a non-empty string")
    return CursorKey(key_id, secret.encode("utf-8"))


class KeySource:
    """A key ring read on first use and kept, read again as the module's docstring says."""

    def __init__(self, read: Callable[[], KeyRing], clock: Callable[[], float]) -> None:
        self._read = read
        self._clock = clock
        self._lock = threading.Lock()
        self._ring: KeyRing | None = None
        self._read_at = 0.0

    def ring(self) -> KeyRing:
        with self._lock:
            if self._ring is None or self._clock() - self._read_at >= REFRESH_SECONDS:
                self._refresh()
            assert self._ring is not None
            return self._ring

    def find(self, key_id: str) -> CursorKey | None:
        found = self.ring().find(key_id)
        if found is not None:
            return found
        with self._lock:
            if self._clock() - self._read_at >= UNKNOWN_KEY_FLOOR_SECONDS:
                self._refresh()
            assert self._ring is not None
            return self._ring.find(key_id)

    def _refresh(self) -> None:
        self._ring = self._read()
        self._read_at = self._clock()


_clock: Callable[[], float] = time.monotonic
_source: KeySource | None = None
_source_lock = threading.Lock()


def source() -> KeySource:
    """The instance's key source, built from its settings on first use."""
    global _source
    with _source_lock:
        if _source is None:
            _source = KeySource(_reader(), _clock)
        return _source


def _reader() -> Callable[[], KeyRing]:
    config = settings()
    if config.cursor_key:  # the local stack's own key
        local = KeyRing(CursorKey("local", config.cursor_key.encode("utf-8")))
        return lambda: local
    if config.cursor_secret_arn:
        arn = config.cursor_secret_arn

        def from_secret() -> KeyRing:
            from podium.dal.secrets import read_secret

            return parse(read_secret(arn))

        return from_secret
    own = KeyRing(CursorKey("p", _process_key()))
    return lambda: own


def _process_key() -> bytes:
    return os.urandom(32)


def use_clock(clock: Callable[[], float]) -> None:
    """Tests: the clock the next key source reads (``reset`` puts the monotonic one back)."""
    global _clock, _source
    _clock, _source = clock, None


def reset() -> None:
    """Forget the key ring (a test that changes the environment)."""
    global _clock, _source
    _clock, _source = time.monotonic, None
