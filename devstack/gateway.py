"""A local stand-in for API Gateway: each HTTP request becomes a REST proxy event for the
function that ``template.yaml`` routes it to."""

from __future__ import annotations

import base64
import json
import os
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import parse_qs, unquote, urlsplit

from devstack.functions import FunctionPool
from devstack.template import Route

STAGE = "local"


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


class Gateway:
    def __init__(self, routes: list[Route], consumers: Mapping[str, Pausable] | None = None) -> None:
        self.routes = routes
        self.clock: ControllableClock | None = None
        self.consumers = consumers if os.environ.get(TEST_CONTROLS) == "1" else None
        if os.environ.get(TEST_CONTROLS) == "1":
            from podium import clock

            self.clock = ControllableClock()
            clock.set_override(self.clock)
        self.pools = {
            route.function: FunctionPool(route.function, route.code_dir, route.handler) for route in routes
        }

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
        text_body: str | None = None
        is_base64 = False
        if body:
            try:
                text_body = body.decode("utf-8")
            except UnicodeDecodeError:
                text_body = base64.b64encode(body).decode("ascii")
                is_base64 = True
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
        found = self.match(method, path)
        if found is None:
            return _error(404, "NotFound", f"no route for {method} {path}")
        route, params = found
        event = self.proxy_event(route, method, path, params, split.query, headers, body, source_ip)
        try:
            result = self.pools[route.function].invoke(event)
        except Exception as error:  # the function crashed: API Gateway answers 502
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
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = dict(self.headers.items())
        status, response_headers, data = self.gateway.handle(
            self.command, self.path, headers, body, self.client_address[0]
        )
        self.send_response(status)
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
