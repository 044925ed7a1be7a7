"""The one Powertools Logger and Metrics of the service, shared by every function. Their
names come from the environment the template sets for every function
(``POWERTOOLS_SERVICE_NAME``, ``POWERTOOLS_METRICS_NAMESPACE``); outside a function (the
benches, the CLI) the metrics go to the template's namespace, Podium, rather than failing
every invocation with "Must contain a metric namespace"."""

import os

from aws_lambda_powertools import Logger, Metrics

NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE") or "Podium"

logger = Logger()
metrics = Metrics(namespace=NAMESPACE)
