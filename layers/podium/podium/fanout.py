"""The thread pool that fans a read out: a board's shard queries, the chunks of a batched
read. One pool per process, as big as the most shards a board has, so that a round of shard
queries takes one round trip.

Each task runs in a copy of the caller's context (``contextvars``), as if the caller ran
it: what the request measures of its DynamoDB use (``podium.dal.usage``) counts the
requests its threads send too."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextvars import copy_context
from functools import cache
from typing import Any, TypeVar, overload

from podium.config import settings

T = TypeVar("T")
R = TypeVar("R")


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=settings().shard_query_concurrency, thread_name_prefix="podium")


def gather(function: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """Run ``function`` over ``items`` concurrently (the scatter of scatter-gather), in order.
    Every task ends before the first one's error is raised: none of a failed call's work
    goes on after it (a notification published by one task is marked published by it, even
    when another task fails, so the retry does not publish it again)."""
    if len(items) <= 1:
        return [function(item) for item in items]
    # one copy per task: a context runs in one thread at a time
    futures = [_pool().submit(copy_context().run, function, item) for item in items]
    wait(futures)
    return [future.result() for future in futures]


@cache
def _write_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=WRITERS, thread_name_prefix="podium-write")


# A stream consumer's writes sent at once (a batch's count-tree records, member by member,
# and its reports, parent by parent): enough to keep a shard's batch of a thousand records
# within its second, not so many that DynamoDB's per-item contention grows.
WRITERS = 32


def gather_writes(function: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``gather`` on a pool of its own: each task may read with ``gather`` itself, which
    would wait for a worker of the pool it holds."""
    if len(items) <= 1:
        return [function(item) for item in items]
    futures = [_write_pool().submit(copy_context().run, function, item) for item in items]
    wait(futures)
    return [future.result() for future in futures]


@cache
def _side_pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="podium-side")


A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")


@overload
def together(first: Callable[[], A], second: Callable[[], B], /) -> tuple[A, B]: ...


@overload
def together(
    first: Callable[[], A], second: Callable[[], B], third: Callable[[], C], /
) -> tuple[A, B, C]: ...


def together(first: Callable[[], Any], *others: Callable[[], Any]) -> tuple[Any, ...]:
    """Run reads at once, each of which may fan out on the main pool itself (so the others
    run on a small pool of their own); their answers in order."""
    pending = [_side_pool().submit(copy_context().run, other) for other in others]
    return (first(), *(future.result() for future in pending))
