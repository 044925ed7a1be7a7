"""The one Powertools Logger of the service, shared by every function."""

from aws_lambda_powertools import Logger

logger = Logger(service="podium")
