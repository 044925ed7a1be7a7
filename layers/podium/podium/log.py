"""The one Powertools Logger and Metrics of the service, shared by every function. Their
names come from the environment the template sets for every function
(``POWERTOOLS_SERVICE_NAME``, ``POWERTOOLS_METRICS_NAMESPACE``)."""

from aws_lambda_powertools import Logger, Metrics

logger = Logger()
metrics = Metrics()
