"""podium.recent: what an instance keeps, and for how long."""

from __future__ import annotations

import pytest

from podium.config import Settings
from podium.recent import Recent


class Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_a_value_is_kept_for_its_seconds_and_no_longer() -> None:
    clock = Clock()
    kept: Recent[str, int] = Recent(1, clock=clock)
    assert kept.get("a") is None
    assert kept.keep("a", 1) == 1
    clock.now += 0.999
    assert kept.get("a") == 1
    clock.now += 0.001
    assert kept.get("a") is None
    kept.keep("a", 2)  # read again: kept from now
    assert kept.get("a") == 2


def test_nothing_is_kept_for_zero_seconds() -> None:
    kept: Recent[str, int] = Recent(0, clock=Clock())
    assert kept.keep("a", 1) == 1
    assert kept.get("a") is None


def test_past_its_limit_it_starts_again_empty() -> None:
    kept: Recent[int, int] = Recent(10, limit=3, clock=Clock())
    for key in range(3):
        kept.keep(key, key)
    kept.keep(0, 5)  # a key it holds does not count twice
    assert [kept.get(k) for k in range(3)] == [5, 1, 2]
    kept.keep(3, 3)
    assert [kept.get(k) for k in range(4)] == [None, None, None, 3]


@pytest.mark.parametrize("seconds", [-1, 1.5, float("nan")])
def test_read_cache_seconds_is_from_0_to_1(seconds: float) -> None:
    with pytest.raises(ValueError, match="READ_CACHE_SECONDS must be from 0 to 1"):
        Settings(read_cache_seconds=seconds)


def test_read_cache_seconds_is_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("READ_CACHE_SECONDS", "0.5")
    assert Settings.from_environment().read_cache_seconds == 0.5
    monkeypatch.setenv("READ_CACHE_SECONDS", "soon")
    with pytest.raises(ValueError, match="READ_CACHE_SECONDS must be a number of seconds, not 'soon'"):
        Settings.from_environment()
    monkeypatch.delenv("READ_CACHE_SECONDS")
    assert Settings.from_environment().read_cache_seconds == 0
