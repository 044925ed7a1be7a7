"""The one Powertools Logger and Metrics of the service, shared by every function."""

from aws_lambda_powertools import Logger, Metrics

logger = Logger(service="podium")
metrics = Metrics(namespace="Podium", service="podium")
