"""``make load``'s harness, small: 8 locust clients for a few seconds on the e2e stack
(which delivers every stream batch twice), then the same checks as the full run: every
member's score against the model of the acknowledged writes, every listing, the
consistency checker. The figures come from ``make load``; here only the verdicts count."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.loadrun import LoadPlan, Target, admin_token, run_load
from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e


def test_a_short_mixed_load_loses_and_doubles_nothing(
    stack: LocalStack, dynamodb_endpoint: str, tmp_path: Path
) -> None:
    # Given the local stack, and the harness's boards of 8 members each
    target = Target(stack.url, stack.table_prefix, dynamodb_endpoint)
    plan = LoadPlan(users=8, duration="4s", members=8, hot=2, settle_timeout=240, out=tmp_path)

    # When 8 clients read, submit (with keys, replays and without) and post events
    report = run_load(target, admin_token(stack.url, 3600), plan)

    # Then every request was answered without an error
    routes = {route.route: route for route in report.routes}
    assert [f"{route.route}: {route.errors}" for route in report.routes if route.errors] == []
    assert routes["POST score (key)"].count > 0
    assert routes["POST events (ids)"].count > 0
    # And every member's score is what the acknowledged writes make it: none lost or doubled
    assert report.model.members == 4 * 8
    assert report.model.acked > 0
    assert report.model.findings == []
    # And each board's listing, read from its index, agrees with the members' scores
    assert report.listings == []
    # And the consistency checker found nothing
    assert len(report.checker) == 4
    assert {board: verdict for board, (verdict, _) in report.checker.items()} == dict.fromkeys(
        report.checker, "consistent"
    )
    assert report.ok, report.failures
