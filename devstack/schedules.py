"""A local stand-in for EventBridge schedules: a timer per ``Schedule`` event of
``template.yaml`` that invokes its function with a scheduled event every period.

As in AWS the first run comes one period after start-up, and a failed invocation is
retried with the same event (the same ``time``), ``EventInvokeConfig.MaximumRetryAttempts``
times (two by default), then dropped and logged. Runs do not overlap here: a tick that
falls while the previous run is still going is skipped, and the next one is on time.
``--schedule-seconds N`` (or ``DEVSTACK_SCHEDULE_SECONDS``) replaces every period, so the
tests see a 5-minute schedule run every few seconds.
"""

from __future__ import annotations

import copy
import logging
import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from devstack.functions import FunctionPool
from devstack.template import Schedule

log = logging.getLogger("devstack.schedules")

RETRY_DELAY = 1.0  # Lambda waits a minute, then two; locally a second, then two


def event_time(moment: datetime) -> str:
    """EventBridge's ``time``: whole seconds, UTC, with a ``Z``."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def scheduled_event(schedule: Schedule, moment: datetime) -> dict[str, Any]:
    """The event EventBridge sends a scheduled rule's target."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "000000000000",
        "time": event_time(moment),
        "region": "us-east-1",
        "resources": [schedule.rule_arn],
        "detail": {},
    }


def describe_period(seconds: float) -> str:
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size and seconds % size == 0:
            count = int(seconds // size)
            return f"{count} {unit}{'s' if unit == 'day' and count > 1 else ''}"
    return f"{seconds:g} s"


class ScheduleTimer:
    def __init__(
        self, schedule: Schedule, period_seconds: float | None = None, retry_delay: float = RETRY_DELAY
    ) -> None:
        if period_seconds is not None and period_seconds <= 0:
            raise ValueError(f"a schedule's period must be positive, not {period_seconds}")
        self.schedule = schedule
        self.overridden = period_seconds is not None
        self.period = period_seconds if period_seconds is not None else schedule.period_seconds
        self.retry_delay = retry_delay
        self.pool = FunctionPool(schedule.function, schedule.code_dir, schedule.handler)
        self.succeeded = 0  # runs that succeeded, retried or not
        self.dropped = 0  # runs that failed every attempt
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"schedule-{schedule.function}", daemon=True)

    def __str__(self) -> str:
        every = f"every {describe_period(self.period)}"
        if self.overridden:
            return f"{every} (--schedule-seconds; template: {self.schedule.expression})"
        return f"{every} ({self.schedule.expression})"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        started = time.monotonic()
        tick = 1
        while not self._stop.wait(max(0.0, started + tick * self.period - time.monotonic())):
            self.fire(datetime.now(UTC))
            due = int((time.monotonic() - started) // self.period) + 1
            if due > tick + 1:
                log.warning(
                    "%s: the run took longer than the period; %d tick(s) skipped",
                    self.schedule.function,
                    due - tick - 1,
                )
            tick = max(tick + 1, due)

    def fire(self, moment: datetime) -> bool:
        """Invoke the function for the tick at ``moment``, retrying a failure with the
        same event; False when every attempt failed (or the stack stopped meanwhile)."""
        if self.schedule.input is not None:
            event = self.schedule.input
        else:
            event = scheduled_event(self.schedule, moment)
        attempts = self.schedule.max_retries + 1
        for attempt in range(1, attempts + 1):
            try:
                self.pool.invoke(copy.deepcopy(event))
            except Exception:
                log.exception(
                    "%s: scheduled invocation for %s failed (attempt %d of %d)",
                    self.schedule.function,
                    event_time(moment),
                    attempt,
                    attempts,
                )
                if attempt < attempts and not self._stop.wait(self.retry_delay * attempt):
                    continue
                self.dropped += 1
                return False
            self.succeeded += 1
            return True
        return False
