"""The reference a leaderboard is usually measured against: a Redis sorted set.

``make bench`` starts its own ``redis-server`` on a free port (no persistence) and
stops it by PID. Latency only: Redis has no capacity units.
"""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

from devstack.processes import LocalServer

KEY = "bench:board"
PIPELINE = 10_000


class RedisServer(LocalServer):
    @classmethod
    def start(cls, log_path: Path | None = None) -> RedisServer:
        binary = shutil.which("redis-server")
        if binary is None:
            raise FileNotFoundError("redis-server is not on PATH: `make bench` installs it (apt-get)")
        return cls.launch(
            lambda port: [
                binary,
                "--port",
                str(port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
            ],
            what="redis-server",
            log_path=log_path,
        )

    def client(self) -> Any:
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port)


def grow(client: Any, member_ids: list[str], scores: list[int]) -> None:
    """ZADD the members, ``PIPELINE`` a round trip."""
    for start in range(0, len(member_ids), PIPELINE):
        pipe = client.pipeline(transaction=False)
        chunk = dict(zip(member_ids[start : start + PIPELINE], scores[start : start + PIPELINE], strict=True))
        pipe.zadd(KEY, chunk)
        pipe.execute()


def top(client: Any, k: int) -> list[tuple[bytes, float]]:
    return list(client.zrevrange(KEY, 0, k - 1, withscores=True))


def rank(client: Any, member: str) -> int:
    """1 + the members with a strictly greater score (shared ranks, as the service)."""
    score = client.zscore(KEY, member)
    return int(client.zcount(KEY, f"({score}", "+inf")) + 1


def timed(function: Any, *args: Any) -> float:
    started = time.perf_counter()
    function(*args)
    return time.perf_counter() - started
