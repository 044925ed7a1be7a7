"""``make metrics-cost`` (bench.metricscost): its figures are the template's routes and the
lines the requests really print, priced as it says."""

from __future__ import annotations

import re

import pytest

from bench import metricscost
from devstack import template
from podium import telemetry
from tests.emf import emf_metrics


def test_the_cost_counts_each_routes_line_as_a_request_prints_it() -> None:
    # Given the template's routes
    routes = template.read().routes()
    # When the cost of 1,000 requests a second is worked out
    found, lines = metricscost.costs(1000)
    # Then each route's line is one EMF line of the request's metrics, under its route
    assert len(lines) == len(routes) == found.routes
    for route, line in zip(routes, lines, strict=True):
        published = emf_metrics(line)
        assert {m.dimension_map[telemetry.ACCESS_PATTERN] for m in published} == {
            f"{route.method} {route.path}"
        }
        assert len(published) == found.metrics_per_request
    # and the figures follow from them: a metric per route and request metric, and HeadLag
    assert found.added_metrics == len(routes) * found.metrics_per_request + 1
    assert found.line_bytes == pytest.approx(sum(len(line.encode()) for line in lines) / len(lines))
    month_gb = found.line_bytes * 1000 * 30 * 24 * 3600 / 1e9
    assert found.log_month == pytest.approx(month_gb * metricscost.PRICES.log_gigabyte)
    assert found.api_method_month == pytest.approx(len(routes) * 7 * metricscost.PRICES.metric_month)


def test_the_dashboards_rows_are_counted() -> None:
    # Given the dashboard's body as written: each metric row starts with its namespace
    body = str(template.load()["Resources"]["PodiumDashboard"]["Properties"]["DashboardBody"].value)
    written = len(re.findall(r'\[\s*"(?:AWS/[A-Za-z]+|Podium)"\s*,', body))
    # Then the cost counts as many
    assert metricscost.costs(1)[0].dashboard_metrics == written > 100
