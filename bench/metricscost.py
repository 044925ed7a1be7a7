"""``python -m bench.metricscost [--requests-per-second N]`` (``make metrics-cost RPS=N``):
what the service's own metrics cost in CloudWatch (docs/observability.md, "Cost"), worked
out from the code and the template rather than estimated by hand.

- The custom metrics ``podium.telemetry`` adds: a custom metric is a metric name with one
  set of dimension values, so the per-request ones are the template's routes times the
  metrics of a request's line, and ``HeadLag`` is one more.
- The log each request adds: the EMF line ``podium.telemetry.publish_request`` prints,
  measured here for every route (its values take a few characters either way), and what
  ingesting it costs a month at the given request rate.
- What API Gateway's per-method metrics (``ApiDetailedMetrics=true``) would add: its
  metrics for each method of the template's routes.
- The dashboard itself, and how many metric rows it draws.

Prices are AWS's published list prices in us-east-1 (2026), in ``PRICES``: check them for
your region before relying on the totals.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
from dataclasses import dataclass

from devstack import template

SECONDS_A_MONTH = 30 * 24 * 3600


@dataclass(frozen=True)
class Prices:
    metric_month: float = 0.30  # a custom metric a month (the first 10,000 of the account)
    log_gigabyte: float = 0.50  # ingesting 1 GB of log (Lambda's logs: the first 10 TB a month)
    dashboard_month: float = 3.00  # a dashboard a month
    api_million_requests: float = 3.50  # API Gateway REST requests, the first 333 million a month


PRICES = Prices()
# API Gateway's per-method metrics with ApiDetailedMetrics=true: Count, Latency,
# IntegrationLatency, 4XXError, 5XXError, CacheHitCount, CacheMissCount (the last two only
# mean something with the stage cache on; they are published either way).
API_METHOD_METRICS = 7


@dataclass(frozen=True)
class Costs:
    routes: int
    metrics_per_request: int
    line_bytes: float  # the mean over the routes
    requests_per_second: float
    dashboard_metrics: int = 0  # the metric rows the dashboard draws

    @property
    def added_metrics(self) -> int:
        return self.routes * self.metrics_per_request + 1  # and HeadLag

    @property
    def metrics_month(self) -> float:
        return self.added_metrics * PRICES.metric_month

    @property
    def log_gigabytes_month(self) -> float:
        return self.line_bytes * self.requests_per_second * SECONDS_A_MONTH / 1e9

    @property
    def log_month(self) -> float:
        return self.log_gigabytes_month * PRICES.log_gigabyte

    @property
    def log_per_million_requests(self) -> float:
        return self.line_bytes * 1e6 / 1e9 * PRICES.log_gigabyte

    @property
    def api_method_metrics(self) -> int:
        return self.routes * API_METHOD_METRICS

    @property
    def api_method_month(self) -> float:
        return self.api_method_metrics * PRICES.metric_month


def request_lines(routes: list[template.Route]) -> list[str]:
    """The EMF line a request of each route prints (with a top's typical figures), in the
    namespace and service the template gives every function."""
    from podium import telemetry
    from podium.dal.usage import Usage

    for name, value in template.read().environment(unresolved="omit").items():
        if name.startswith("POWERTOOLS_"):
            os.environ.setdefault(name, value)
    lines = []
    for route in routes:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            telemetry.publish_request(f"{route.method} {route.path}", 200, Usage(12.5, 0.0, 27))
        lines.append(printed.getvalue())
    return lines


def dashboard_rows() -> int:
    """The metric rows of the template's dashboard (its ``!Sub`` variables made up)."""
    body = template.load()["Resources"]["PodiumDashboard"]["Properties"]["DashboardBody"]
    widgets = json.loads(re.sub(r"\$\{[^}]+\}", "x", str(body.value)))["widgets"]
    return sum(len(widget["properties"].get("metrics", [])) for widget in widgets)


def costs(requests_per_second: float) -> tuple[Costs, list[str]]:
    routes = template.read().routes()
    lines = request_lines(routes)
    per_request = len(json.loads(lines[0])["_aws"]["CloudWatchMetrics"][0]["Metrics"])
    mean = sum(len(line.encode()) for line in lines) / len(lines)  # each with its newline
    return Costs(len(routes), per_request, mean, requests_per_second, dashboard_rows()), lines


def report(found: Costs) -> str:
    rps = f"{found.requests_per_second:,.0f}"
    return "\n".join(
        [
            f"routes in template.yaml: {found.routes}",
            f"custom metrics podium.telemetry adds: {found.added_metrics} "
            f"({found.routes} routes x {found.metrics_per_request} per request, and HeadLag): "
            f"${found.metrics_month:,.2f} a month at ${PRICES.metric_month:.2f} a metric",
            f"EMF line of a request: {found.line_bytes:,.0f} bytes on average over the routes",
            f"  its log: ${found.log_per_million_requests:,.2f} per million requests "
            f"at ${PRICES.log_gigabyte:.2f} a GB ingested "
            f"(API Gateway: ${PRICES.api_million_requests:.2f} per million REST requests)",
            f"  at {rps} requests/s: {found.log_gigabytes_month:,.1f} GB a month, ${found.log_month:,.2f}",
            f"API Gateway per-method metrics (ApiDetailedMetrics=true): {found.api_method_metrics} "
            f"({found.routes} methods x {API_METHOD_METRICS}): ${found.api_method_month:,.2f} a month",
            f"the dashboard: {found.dashboard_metrics} metric rows, ${PRICES.dashboard_month:.2f} a month",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.metricscost", description=__doc__)
    parser.add_argument("--requests-per-second", type=float, default=100.0, help="the API's mean rate")
    args = parser.parse_args(argv)
    found, _ = costs(args.requests_per_second)
    print(report(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
