"""The service's own CloudWatch metrics beyond what AWS measures itself, in one place: their
names, their dimensions, and the calls that emit them. They go out as CloudWatch embedded
metric format (EMF) lines in the function's log, in the namespace the template sets for
every function (``POWERTOOLS_METRICS_NAMESPACE``), with Powertools' ``service`` dimension.
The dashboard (template.yaml, ``PodiumDashboard``) shows them; docs/observability.md says
how to read them and what they cost.

Per API request (``publish_request``, called by ``podium.http.entrypoint`` for every
route), with the dimension ``AccessPattern``, the route as API Gateway names it
(``GET /boards/{boardId}/top``; one function serves each):

- ``ConsumedRCU`` and ``ConsumedWCU``: the capacity units its DynamoDB requests consumed,
  as DynamoDB reported them (``podium.dal.usage``);
- ``ItemsRead``: the items those reads went through (a query's scanned items);
- ``ServerError`` and ``ClientError``: 1 when it was answered 5xx (4xx), else 0. The
  function answers its own errors (``podium.http.answer_error``), so Lambda's ``Errors``
  counts only the invocations that crashed; these count every error answer.

Per head the aggregator writes (``note_head_lag``): ``HeadLag``, the milliseconds from the
oldest score change the write applies to the write, that is, how long the head (which
serves a first page of ``top``) showed the board without that change; no dimension but
``service`` (one per board would make a metric, and a bill, per board).

The stream consumers also count their records (``StreamRecordsAggregated``,
``StreamRecordsNotified``, ``podium.stream.entrypoint``), the snapshot job its snapshots
(``SnapshotsTaken``), and a score submission itself (``ScoreSubmitted``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import AmazonCloudWatchEMFProvider

from podium.log import NAMESPACE, logger

if TYPE_CHECKING:
    from podium.dal.usage import Usage

ACCESS_PATTERN = "AccessPattern"
CONSUMED_RCU = "ConsumedRCU"
CONSUMED_WCU = "ConsumedWCU"
ITEMS_READ = "ItemsRead"
SERVER_ERROR = "ServerError"
CLIENT_ERROR = "ClientError"
HEAD_LAG = "HeadLag"


def publish_request(pattern: str, status: int, used: Usage) -> None:
    """One EMF line for one request, with its route as ``AccessPattern``: its method and
    path as API Gateway names the route (``GET /boards/{boardId}/top``, the key that
    ``podium.http``'s resolver matched), never the path with its ids in it (one dimension
    value per route keeps the metrics' count, and their cost, fixed)."""
    _publish(
        {
            CONSUMED_RCU: used.read_units,
            CONSUMED_WCU: used.write_units,
            ITEMS_READ: used.items_read,
            SERVER_ERROR: int(status >= 500),
            CLIENT_ERROR: int(400 <= status < 500),
        },
        MetricUnit.Count,
        {ACCESS_PATTERN: pattern},
    )


def note_head_lag(lag: timedelta) -> None:
    """One EMF line for one head the aggregator wrote: how stale it was. A clock behind the
    write's counts as 0."""
    milliseconds = max(0.0, lag.total_seconds() * 1000)
    _publish({HEAD_LAG: round(milliseconds, 3)}, MetricUnit.Milliseconds)


def _publish(
    values: Mapping[str, float], unit: MetricUnit, dimensions: Mapping[str, str] | None = None
) -> None:
    """Print one EMF line now, from a metric set of its own rather than the shared
    ``metrics`` (whose flush follows the invocation, and whose state every Metrics object
    of the process shares): the local stack runs many functions at once in one process,
    and their lines must neither mix nor race. A failure to publish is logged, never
    raised: no answer and no stream batch depends on a metric."""
    try:
        line = AmazonCloudWatchEMFProvider(namespace=NAMESPACE)
        for dimension, value in (dimensions or {}).items():
            line.add_dimension(dimension, value)
        for metric, number in values.items():
            line.add_metric(metric, unit, number)
        line.flush_metrics()
    except Exception:  # a metric is never worth a failed request
        logger.exception("could not publish metrics", extra={"metrics": sorted(values)})
