"""A local stand-in for API Gateway: each HTTP request becomes a REST proxy event for the
function that ``template.yaml`` routes it to; or, as the HTTP door (``front_door="http"``,
devstack/httpdoor.py), the HTTP API's payload format 1.0 event for the function of the
template's HTTP API route, with no edge authorizer."""

from __future__ import annotations

import base64
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from devstack import httpdoor
from devstack.apidocs import ApiDocs
from devstack.functions import FunctionPool
from devstack.issuer import PREFIX as ISSUER_PREFIX
from devstack.issuer import LocalIssuer
from devstack.template import Authorizer, Route

STAGE = "local"


Answer = tuple[int, dict[str, str], bytes]


GATEWAY_BODY_LIMIT = 10 * 1024 * 1024  # API Gateway's payload quota


def _error(status: int, code: str, message: str) -> tuple[int, dict[str, str], bytes]:
    body = json.dumps({"code": code, "message": message}).encode()
    return status, {"Content-Type": "application/json"}, body


# Routes for tests only, with DEVSTACK_TEST_CONTROLS=1: they steer what a test cannot
# otherwise make happen on time (the clock, a stream consumer falling behind).
TEST_CONTROLS = "DEVSTACK_TEST_CONTROLS"
CLOCK_PATH = "/_devstack/clock"
STREAMS_PATH = "/_devstack/streams/"


class ControllableClock:
    """The service's clock, set over HTTP (``PUT /_devstack/clock {"now": "…Z"}``; ``null``
    goes back to real time): tests of period boundaries move time instead of waiting for
    midnight."""

    def __init__(self) -> None:
        self.fixed: datetime | None = None

    def __call__(self) -> datetime:
        return self.fixed or datetime.now(UTC)

    def handle(self, method: str, body: bytes) -> tuple[int, dict[str, str], bytes]:
        if method == "PUT":
            try:
                raw = json.loads(body or b"{}").get("now")
                self.fixed = datetime.fromisoformat(raw.replace("Z", "+00:00")) if raw else None
            except (ValueError, AttributeError):
                message = 'body must be {"now": "<ISO 8601 time>"} or {"now": null}'
                return _error(400, "ValidationError", message)
        now = self().isoformat().replace("+00:00", "Z")
        return 200, {"Content-Type": "application/json"}, json.dumps({"now": now}).encode()


class Pausable(Protocol):
    def pause(self, paused: bool) -> None: ...


def pause_consumer(
    consumers: Mapping[str, Pausable], function: str, method: str, body: bytes
) -> tuple[int, dict[str, str], bytes]:
    """``PUT /_devstack/streams/<Function> {"paused": true}``: the consumer stops reading its
    stream (records wait there, as behind a Lambda that is throttled or failing) until
    ``{"paused": false}``: tests of what a late consumer does."""
    consumer = consumers.get(function)
    if consumer is None:
        return _error(404, "NotFound", f"no stream consumer {function}: {', '.join(sorted(consumers))}")
    try:
        paused = json.loads(body or b"{}")["paused"]
    except (ValueError, KeyError, TypeError):
        paused = None
    if method != "PUT" or not isinstance(paused, bool):
        return _error(400, "ValidationError", 'PUT a body {"paused": true} or {"paused": false}')
    consumer.pause(paused)
    return 200, {"Content-Type": "application/json"}, json.dumps({"paused": paused}).encode()


class EdgeAuth:
    """API Gateway's Lambda REQUEST authorizers, as template.yaml configures them: a request
    without the identity headers is 401 before any function runs; else the authorizer is
    invoked (its answer cached per identity for ReauthorizeEvery seconds), an exception
    "Unauthorized" is 401, a policy that does not allow the method ARN is 403, and what
    it allows reaches the function as ``requestContext.authorizer``. The bodies are the
    template's GatewayResponses."""

    def __init__(
        self, authorizers: Mapping[str, Authorizer], responses: Mapping[str, tuple[int, str]]
    ) -> None:
        self.authorizers = dict(authorizers)
        self.responses = dict(responses)
        self.pools = {
            name: FunctionPool(spec.function, spec.code_dir, spec.handler)
            for name, spec in authorizers.items()
        }
        self._cache: dict[tuple[str, tuple[str, ...]], tuple[float, dict[str, Any]]] = {}
        self._lock = threading.Lock()

    def gateway_response(self, kind: str, method: str, path: str) -> Answer:
        status, body = self.responses.get(kind, (500, '{"code": "InternalError", "message": "' + kind + '"}'))
        body = body.replace("$context.httpMethod", method).replace("$context.path", path)
        return status, {"Content-Type": "application/json"}, body.encode()

    def check(
        self, route: Route, method: str, path: str, headers: Mapping[str, str]
    ) -> tuple[dict[str, Any] | None, Answer | None]:
        """The authorizer's context for the function, or the gateway's refusal."""
        assert route.authorizer is not None
        spec = self.authorizers[route.authorizer]
        lowered = {name.lower(): value for name, value in headers.items()}
        identity = tuple(lowered.get(name.lower(), "") for name in spec.identity_headers)
        if not all(identity):
            return None, self.gateway_response("UNAUTHORIZED", method, path)
        method_arn = f"arn:aws:execute-api:us-east-1:000000000000:local/{STAGE}/{method}{path}"
        answer = self._cached(spec.name, identity)
        if answer is None:
            event = {
                "type": "REQUEST",
                "methodArn": method_arn,
                "resource": route.path,
                "path": path,
                "httpMethod": method,
                "headers": dict(headers),
                "multiValueHeaders": {name: [value] for name, value in headers.items()},
                "requestContext": {"stage": STAGE, "httpMethod": method, "resourcePath": route.path},
            }
            try:
                answer = self.pools[spec.name].invoke(event)
            except Exception as error:  # as API Gateway: "Unauthorized" is 401, anything else 500
                kind = "UNAUTHORIZED" if str(error) == "Unauthorized" else "AUTHORIZER_FAILURE"
                return None, self.gateway_response(kind, method, path)
            if spec.ttl_seconds > 0:
                with self._lock:
                    self._cache[(spec.name, identity)] = (time.monotonic() + spec.ttl_seconds, answer)
        if not allows(answer.get("policyDocument") or {}, method_arn):
            return None, self.gateway_response("ACCESS_DENIED", method, path)
        return {**(answer.get("context") or {}), "principalId": answer.get("principalId")}, None

    def _cached(self, name: str, identity: tuple[str, ...]) -> dict[str, Any] | None:
        with self._lock:
            found = self._cache.get((name, identity))
            if found is None or found[0] < time.monotonic():
                return None
            return found[1]


def _arn_matches(pattern: str, arn: str) -> bool:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.fullmatch(regex, arn) is not None


def allows(policy: Mapping[str, Any], method_arn: str) -> bool:
    """IAM's evaluation, as far as an authorizer's policy goes: an explicit Deny wins, else
    some Allow statement must name the method ARN (``*`` and ``?`` as wildcards)."""
    verdicts = set()
    for statement in policy.get("Statement") or []:
        resources = statement.get("Resource") or []
        resources = [resources] if isinstance(resources, str) else resources
        if any(_arn_matches(str(resource), method_arn) for resource in resources):
            verdicts.add(statement.get("Effect"))
    return "Allow" in verdicts and "Deny" not in verdicts


class Gateway:
    def __init__(
        self,
        routes: list[Route],
        consumers: Mapping[str, Pausable] | None = None,
        edge: EdgeAuth | None = None,
        issuer: LocalIssuer | None = None,
        docs: ApiDocs | None = None,
        front_door: str = httpdoor.REST,
        default_route: Route | None = None,
    ) -> None:
        if front_door not in httpdoor.FRONT_DOORS:
            raise ValueError(f"front door {front_door!r}: one of {', '.join(httpdoor.FRONT_DOORS)}")
        self.routes = routes
        self.front_door = front_door
        self.default_route = default_route  # the HTTP API's $default route
        self.edge = edge
        self.issuer = issuer
        self.docs = docs  # Swagger UI at /docs: the local stack's own, as the issuer is
        self.clock: ControllableClock | None = None
        self.consumers = consumers if os.environ.get(TEST_CONTROLS) == "1" else None
        if os.environ.get(TEST_CONTROLS) == "1":
            from podium import clock

            self.clock = ControllableClock()
            clock.set_override(self.clock)
        self.pools = {
            route.function: FunctionPool(route.function, route.code_dir, route.handler)
            for route in [*routes, *([default_route] if default_route else [])]
        }

    @property
    def http_door(self) -> bool:
        return self.front_door == httpdoor.HTTP

    def too_large(self) -> Answer:
        """What API Gateway answers a body over its payload quota, without reading it."""
        if self.http_door:
            return httpdoor.TOO_LARGE
        limit = f"the body is over the API limit of {GATEWAY_BODY_LIMIT} bytes (10 MiB)"
        return _error(413, "PayloadTooLarge", limit)

    def match(self, method: str, path: str) -> tuple[Route, dict[str, str]] | None:
        for route in self.routes:
            found = route.pattern.match(path)
            if found and route.method == method:
                return route, {k: unquote(v) for k, v in found.groupdict().items()}
        return None

    def proxy_event(
        self,
        route: Route,
        method: str,
        path: str,
        params: dict[str, str],
        query: str,
        headers: dict[str, str],
        body: bytes,
        source_ip: str,
    ) -> dict[str, Any]:
        multi_query = parse_qs(query, keep_blank_values=True)
        text_body, is_base64 = httpdoor.proxy_body(body)
        return {
            "resource": route.path,
            "path": path,
            "httpMethod": method,
            "headers": headers or None,
            "multiValueHeaders": {k: [v] for k, v in headers.items()} or None,
            "queryStringParameters": {k: v[-1] for k, v in multi_query.items()} or None,
            "multiValueQueryStringParameters": multi_query or None,
            "pathParameters": params or None,
            "stageVariables": None,
            "requestContext": {
                "resourcePath": route.path,
                "httpMethod": method,
                "path": f"/{STAGE}{path}",
                "stage": STAGE,
                "requestId": str(uuid.uuid4()),
                "requestTimeEpoch": int(time.time() * 1000),
                "accountId": "000000000000",
                "apiId": "local",
                "protocol": "HTTP/1.1",
                "identity": {"sourceIp": source_ip},
            },
            "body": text_body,
            "isBase64Encoded": is_base64,
        }

    def handle(
        self, method: str, target: str, headers: dict[str, str], body: bytes, source_ip: str
    ) -> tuple[int, dict[str, str], bytes]:
        split = urlsplit(target)
        # API Gateway matches routes on the path as sent, still percent-encoded, so an
        # escaped "/" or "#" stays inside its segment; the REST proxy event's ``path`` is
        # that raw path too, and the handler decodes its parameters (podium.http).
        path = split.path or "/"
        if self.clock is not None and unquote(path) == CLOCK_PATH:
            return self.clock.handle(method, body)
        if self.consumers is not None and path.startswith(STREAMS_PATH):
            return pause_consumer(self.consumers, unquote(path[len(STREAMS_PATH) :]), method, body)
        if self.issuer is not None and path.startswith(ISSUER_PREFIX):
            answer = self.issuer.handle(method, path, body)
            if answer is not None:
                return answer
        if self.docs is not None and (docs := self.docs.handle(method, path, headers)) is not None:
            return docs
        found = self.match(method, path)
        if found is None and self.http_door and self.default_route is not None:
            found = self.default_route, {}
        if found is None and self.http_door:
            return httpdoor.NOT_FOUND
        if found is None:
            return _error(404, "NotFound", f"no route for {method} {path}")
        route, params = found
        if self.http_door:
            event = httpdoor.event(route, method, path, params, split.query, headers, body, source_ip)
        else:
            event = self.proxy_event(route, method, path, params, split.query, headers, body, source_ip)
        if self.edge is not None and route.authorizer is not None:
            context, refusal = self.edge.check(route, method, path, headers)
            if refusal is not None:
                return refusal
            event["requestContext"]["authorizer"] = context
        try:
            result = self.pools[route.function].invoke(event)
        except Exception as error:  # the function crashed: API Gateway answers 502 (an HTTP API 500)
            if self.http_door:
                return httpdoor.INTEGRATION_FAILED
            return _error(502, "InternalError", f"{route.function} failed: {type(error).__name__}")
        response_headers = dict(result.get("headers") or {})
        for name, values in (result.get("multiValueHeaders") or {}).items():
            response_headers[name] = ",".join(values)
        payload = result.get("body") or ""
        data = base64.b64decode(payload) if result.get("isBase64Encoded") else payload.encode("utf-8")
        return int(result["statusCode"]), response_headers, data


class _RequestHandler(BaseHTTPRequestHandler):
    gateway: Gateway
    protocol_version = "HTTP/1.1"

    def _serve(self) -> None:
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            length = -1
        if length < 0 or length > GATEWAY_BODY_LIMIT:
            # API Gateway refuses such a body itself (its REQUEST_TOO_LARGE response, which the
            # template gives the API's error shape) without reading it, and so does this.
            self.close_connection = True
            status, response_headers, data = self.gateway.too_large()
        else:
            body = self.rfile.read(length) if length else b""
            headers = dict(self.headers.items())
            status, response_headers, data = self.gateway.handle(
                self.command, self.path, headers, body, self.client_address[0]
            )
        self.send_response(status)
        if self.close_connection:
            self.send_header("Connection", "close")
        for name, value in response_headers.items():
            if name.lower() not in ("content-length", "connection"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if data and self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _serve

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if getattr(self.server, "verbose", False):
            super().log_message(format, *args)


class _Server(ThreadingHTTPServer):
    request_queue_size = 512  # many clients at once, as API Gateway takes them
    daemon_threads = True


class ApiServer:
    def __init__(self, gateway: Gateway, host: str, port: int, verbose: bool = False) -> None:
        handler = type("Handler", (_RequestHandler,), {"gateway": gateway})
        self.server = _Server((host, port), handler)
        self.server.verbose = verbose  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self.server.serve_forever, name="api", daemon=True)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
