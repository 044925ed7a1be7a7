"""podium.fanout.gather: tasks run at once, answers in order, and a failed call's work does
not go on after it (the notifier's publishes are marked before the retry reads them)."""

from __future__ import annotations

import threading
import time

import pytest

from podium import fanout


def test_answers_come_in_the_order_of_the_items():
    # Given tasks that end in the reverse order of their items
    def slow_first(item: int) -> int:
        time.sleep(0.02 * (5 - item))
        return item * 10

    # When they are gathered, then the answers follow the items
    assert fanout.gather(slow_first, [0, 1, 2, 3, 4]) == [0, 10, 20, 30, 40]


def test_a_failed_task_is_raised_only_once_every_other_task_has_ended():
    # Given one task that fails at once and others that are still at work then
    started = threading.Barrier(4, timeout=5)
    finished: list[int] = []
    lock = threading.Lock()

    def work(item: int) -> int:
        started.wait()  # all four are running when the first one fails
        if item == 0:
            raise RuntimeError("the first task failed")
        time.sleep(0.2)
        with lock:
            finished.append(item)
        return item

    # When they are gathered, then the failure is raised
    with pytest.raises(RuntimeError, match="the first task failed"):
        fanout.gather(work, [0, 1, 2, 3])
    # and by then every other task had finished its work (none goes on after the call)
    assert sorted(finished) == [1, 2, 3]
