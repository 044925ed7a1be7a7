"""The HTTP door: what API Gateway's HTTP API (template.yaml's ``PodiumHttpApi``, deployed
with ``HttpApi=on``) sends a function and answers itself, for the local gateway's
``--front-door http`` (``make run FRONT_DOOR=http``).

Its Lambda integrations use payload format 1.0, the REST proxy event's fields, with these
differences from what the REST API sends (API Gateway's "Payload format version" of HTTP
APIs): a ``version`` of "1.0"; header names in lower case; a ``$default`` stage, so no
stage in ``requestContext.path``; ``requestContext.authorizer`` holding only
``{"claims": null, "scopes": null}`` (no authorizer ran: ``podium.identity`` reads the
bearer token itself); ``resourceId`` null; and a request no route matches goes to the
``$default`` route with ``$default`` as its resource. What the HTTP API answers itself
is ``{"message": ...}``, not the API's ``{"code", "message"}``: there are no gateway
responses to reshape it.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from typing import Any
from urllib.parse import parse_qs

from devstack.template import Route

REST = "rest"
HTTP = "http"
FRONT_DOORS = (REST, HTTP)
STAGE = "$default"

Answer = tuple[int, dict[str, str], bytes]


def own_answer(status: int, message: str) -> Answer:
    """An answer of the HTTP API's own, in its own shape."""
    return status, {"Content-Type": "application/json"}, json.dumps({"message": message}).encode()


NOT_FOUND = own_answer(404, "Not Found")  # only without a $default route
TOO_LARGE = own_answer(413, "Request Entity Too Large")
INTEGRATION_FAILED = own_answer(500, "Internal Server Error")


def proxy_body(body: bytes) -> tuple[str | None, bool]:
    """A request's body as a proxy event carries it, in either door's payload: the text of
    UTF-8, else base64 with ``isBase64Encoded``; None for no body."""
    if not body:
        return None, False
    try:
        return body.decode("utf-8"), False
    except UnicodeDecodeError:
        return base64.b64encode(body).decode("ascii"), True


def event(
    route: Route,
    method: str,
    path: str,
    params: dict[str, str],
    query: str,
    headers: dict[str, str],
    body: bytes,
    source_ip: str,
) -> dict[str, Any]:
    """The payload format 1.0 event of a request that ``route`` matched."""
    lowered = {name.lower(): value for name, value in headers.items()}
    multi_query = parse_qs(query, keep_blank_values=True)
    text_body, is_base64 = proxy_body(body)
    now = time.time()
    host = lowered.get("host", "localhost")
    return {
        "version": "1.0",
        "resource": route.path,
        "path": path,
        "httpMethod": method,
        "headers": lowered or None,
        "multiValueHeaders": {k: [v] for k, v in lowered.items()} or None,
        # the first of a repeated parameter, as AWS's example of the format shows it
        "queryStringParameters": {k: v[0] for k, v in multi_query.items()} or None,
        "multiValueQueryStringParameters": multi_query or None,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "authorizer": {"claims": None, "scopes": None},
            "domainName": host,
            "domainPrefix": host.split(".", 1)[0],
            "extendedRequestId": str(uuid.uuid4()),
            "httpMethod": method,
            "identity": {"sourceIp": source_ip, "userAgent": lowered.get("user-agent")},
            "path": path,
            "protocol": "HTTP/1.1",
            "requestId": str(uuid.uuid4()),
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "requestTimeEpoch": int(now * 1000),
            "resourceId": None,
            "resourcePath": route.path,
            "stage": STAGE,
        },
        "pathParameters": params or None,
        "stageVariables": None,
        "body": text_body,
        "isBase64Encoded": is_base64,
    }
