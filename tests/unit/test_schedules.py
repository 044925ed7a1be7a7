"""The local EventBridge: rate expressions, the template's schedules, the timer."""

from __future__ import annotations

import copy
import re
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from devstack import template
from devstack.schedules import ScheduleTimer, scheduled_event
from devstack.template import Schedule


@pytest.mark.parametrize(
    ("expression", "seconds"),
    [
        ("rate(1 minute)", 60),
        ("rate(5 minutes)", 300),
        ("rate(1 hour)", 3600),
        ("rate(12 hours)", 43200),
        ("rate(2 days)", 172800),
    ],
)
def test_rate_expressions(expression: str, seconds: int) -> None:
    assert template.rate_seconds(expression) == seconds


@pytest.mark.parametrize(
    "expression", ["rate(1 minutes)", "rate(5 minute)", "rate(0 minutes)", "cron(0 12 * * ? *)", "5 minutes"]
)
def test_what_eventbridge_refuses_is_refused(expression: str) -> None:
    with pytest.raises(ValueError, match="rate"):
        template.rate_seconds(expression)


def _with_rate(minutes: int) -> template.Template:
    """The template, with another default for SnapshotRateMinutes."""
    spec = template.read("unit-")
    document = copy.deepcopy(spec.document)
    document["Parameters"]["SnapshotRateMinutes"]["Default"] = minutes
    return template.Template(document=document, table_names=spec.table_names, prefix=spec.prefix)


def _snapshots(spec: template.Template) -> Schedule:
    """The snapshot job's schedule (the template has others: the period results job's)."""
    [found] = [s for s in spec.schedules() if s.function == "TakeSnapshotsFunction"]
    return found


def test_the_template_schedules_the_snapshots_the_period_results_and_the_reshard_worker() -> None:
    by_function = {s.function: s.expression for s in template.read("unit-").schedules()}
    assert by_function == {
        "TakeSnapshotsFunction": "rate(5 minutes)",
        "PeriodResultsFunction": "rate(1 minute)",
        "ReshardWorkerFunction": "rate(1 minute)",
    }


def test_the_snapshot_schedule_follows_its_parameter_singular_for_one_minute() -> None:
    # Given the template's default, and the same template with 1 and 15 minutes
    default = _snapshots(template.read("unit-"))
    one = _snapshots(_with_rate(1))
    fifteen = _snapshots(_with_rate(15))

    # Then the schedule's expression is one EventBridge takes, for each
    assert (default.function, default.expression, default.period_seconds) == (
        "TakeSnapshotsFunction",
        "rate(5 minutes)",
        300,
    )
    assert (one.expression, one.period_seconds) == ("rate(1 minute)", 60)
    assert (fifteen.expression, fifteen.period_seconds) == ("rate(15 minutes)", 900)
    assert default.enabled
    assert default.max_retries == 2
    assert default.code_dir.name == "take_snapshots"


def test_the_retention_parameter_reaches_the_functions_environment() -> None:
    environment = template.read("unit-").environment(unresolved="omit")
    assert environment["SNAPSHOT_RETENTION_DAYS"] == "90"


class FakePool:
    """Stands in for the function: fails the first ``failures`` invocations."""

    def __init__(self, failures: int = 0) -> None:
        self.failures = failures
        self.events: list[dict[str, Any]] = []

    def invoke(self, event: dict[str, Any]) -> None:
        self.events.append(event)
        if len(self.events) <= self.failures:
            raise RuntimeError("the database is down")


def _timer(pool: FakePool, period: float = 60) -> ScheduleTimer:
    schedule = _snapshots(template.read("unit-"))
    timer = ScheduleTimer(schedule, period, retry_delay=0)
    timer.pool = pool  # type: ignore[assignment]
    return timer


def test_the_event_is_eventbridge_s_scheduled_event() -> None:
    schedule = _snapshots(template.read("unit-"))
    event = scheduled_event(schedule, datetime(2026, 11, 22, 10, 5, 0, 731000, tzinfo=UTC))
    assert event["time"] == "2026-11-22T10:05:00Z"
    assert (event["version"], event["source"], event["detail-type"], event["detail"]) == (
        "0",
        "aws.events",
        "Scheduled Event",
        {},
    )
    assert re.fullmatch(
        r"arn:aws:events:us-east-1:\d{12}:rule/TakeSnapshotsFunctionSchedule", event["resources"][0]
    )


def test_a_failed_run_is_retried_with_the_same_event_then_dropped() -> None:
    moment = datetime(2026, 11, 22, 10, 5, tzinfo=UTC)

    # A run that fails once succeeds on its retry, with the very same event
    pool = FakePool(failures=1)
    timer = _timer(pool)
    assert timer.fire(moment)
    assert len(pool.events) == 2
    assert pool.events[0] == pool.events[1]
    assert (timer.succeeded, timer.dropped) == (1, 0)

    # A run that fails every time is tried three times (two retries), then dropped
    pool = FakePool(failures=10)
    timer = _timer(pool)
    assert not timer.fire(moment)
    assert len(pool.events) == 3
    assert (timer.succeeded, timer.dropped) == (0, 1)


def test_the_timer_fires_every_period_until_stopped() -> None:
    # Given a timer whose period is overridden to a tenth of a second
    pool = FakePool()
    timer = _timer(pool, period=0.1)
    assert str(timer).startswith("every 0.1 s (--schedule-seconds; template: rate(5 minutes))")

    # When it runs for a while, and is stopped
    timer.start()
    time.sleep(0.75)
    timer.stop()
    fired = len(pool.events)
    time.sleep(0.25)

    # Then it fired about once per period, and not after it stopped
    assert 2 <= fired <= 8
    assert len(pool.events) == fired
    assert all(event["detail-type"] == "Scheduled Event" for event in pool.events)
    assert len({event["id"] for event in pool.events}) == fired


def test_a_period_that_is_not_positive_is_refused() -> None:
    schedule = _snapshots(template.read("unit-"))
    with pytest.raises(ValueError, match="positive"):
        ScheduleTimer(schedule, 0)
