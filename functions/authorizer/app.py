"""The edge authorizer: API Gateway's REQUEST authorizer for every route that needs a token.
It checks the bearer token and answers the routes the caller's role may call (API Gateway
caches that answer per token); the route's function decides what depends on the board."""

from typing import Any

from podium import authorizer
from podium.log import logger


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return authorizer.authorize(event)
