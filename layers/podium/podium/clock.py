"""The service's clock. Periods are computed from it, so tests move it instead of waiting
for midnight: the local stack's controllable clock (``devstack --controllable-clock``)
installs an override; nothing in AWS does."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

_override: Callable[[], datetime] | None = None


def now() -> datetime:
    return _override() if _override is not None else datetime.now(UTC)


def set_override(clock: Callable[[], datetime] | None) -> None:
    global _override
    _override = clock
