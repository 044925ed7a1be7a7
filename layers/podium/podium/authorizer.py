"""What the edge authorizer answers API Gateway: an IAM policy that lets the token's role
call the routes it may ever call (``access.reachable``), with the caller in its context,
or ``Unauthorized`` (API Gateway's 401) for a missing or bad token, whatever is wrong with
it; an issuer whose keys cannot be fetched is a failure (API Gateway's 500), not a 401.

API Gateway caches the answer per token for every route of the API, so the policy names
all of the role's routes, not only the one called; a player's call to an admin-only route
is then refused at the edge (403) without invoking that route's function."""

from __future__ import annotations

import re
from typing import Any

from podium import access, identity
from podium.errors import IssuerUnavailable, Unauthorized
from podium.log import logger

# What an authorizer raises for API Gateway to answer 401: the message must be exactly this.
UNAUTHORIZED = "Unauthorized"
PATH_PARAMETER = re.compile(r"\{\w+\}")


class Refused(Exception):
    """The token is missing or invalid: API Gateway answers 401 (``UNAUTHORIZED``)."""


def route_resource(api_arn: str, route: access.Route) -> str:
    """The execute-api ARN of a route, its path parameters as wildcards."""
    return f"{api_arn}/{route.method}{PATH_PARAMETER.sub('*', route.path)}"


def authorize(event: dict[str, Any]) -> dict[str, Any]:
    # methodArn: arn:aws:execute-api:{region}:{account}:{apiId}/{stage}/{METHOD}/{path}
    api_arn = "/".join(str(event["methodArn"]).split("/")[:2])
    try:
        token = identity.bearer_token(event.get("headers") or {})
        if token is None:
            raise Unauthorized("no bearer token")
        caller, expires = identity.caller_from_token(token)
    except Unauthorized as error:
        logger.info("token refused", extra={"reason": error.message})
        raise Refused(UNAUTHORIZED) from None
    except IssuerUnavailable:
        # Any exception but "Unauthorized" makes API Gateway answer 500 (AUTHORIZER_FAILURE,
        # the template's InternalError body): the caller retries; its token is not at fault.
        logger.exception("the token could not be checked")
        raise
    routes = access.reachable(caller.role)
    resources = (
        [f"{api_arn}/*/*"]
        if routes == frozenset(access.Route)
        else sorted(route_resource(api_arn, route) for route in routes)
    )
    return {
        "principalId": caller.member_id or caller.role.value,
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": "Allow", "Resource": resources}],
        },
        "context": {"role": caller.role.value, "memberId": caller.member_id or "", "expiresAt": expires},
    }
