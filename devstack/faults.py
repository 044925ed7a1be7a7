"""A fault proxy between the service and DynamoDB (Local): it forwards each request and,
at rates set while it runs, answers or breaks it as an unlucky day in AWS would.

Per request, in this order of precedence (one fault at most per request):

* ``throttle``: a 400 ``ProvisionedThroughputExceededException`` (or
  ``ThrottlingException`` for a transaction, as DynamoDB answers them), not forwarded;
* ``error``: a 500 ``InternalServerError``, not forwarded;
* ``drop_before``: the connection closed without an answer, not forwarded;
* ``drop_after``: forwarded, and the connection closed before the answer: the request
  took effect, but the client never hears so (botocore then sends it again);
* ``latency``: up to ``delay`` seconds added before forwarding (on top of the rest).

Faults apply only to the operations named in ``operations`` (the part of ``X-Amz-Target``
after the dot: ``UpdateItem``, ``TransactWriteItems``, ``GetRecords``...), or to every
operation when it is empty. DynamoDB Streams calls come through the same endpoint.

A test in the same process sets the rates on the object (``proxy.set(FaultRates(...))``);
another process sets them over HTTP: ``PUT /_faults`` with the rates as JSON, and
``GET /_faults`` answers the rates and the faults injected so far. Run on its own:
``python -m devstack.faults --upstream http://127.0.0.1:8000`` (prints its endpoint).
"""

from __future__ import annotations

import argparse
import http.client
import json
import random
import socket
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field, fields
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from devstack.processes import free_port

CONTROL_PATH = "/_faults"
JSON_1_0 = "application/x-amz-json-1.0"
THROTTLED = "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException"
THROTTLED_TRANSACTION = "com.amazon.coral.availability#ThrottlingException"
INTERNAL = "com.amazonaws.dynamodb.v20120810#InternalServerError"
# Not forwarded either way: the proxy answers with a body and a length of its own.
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "proxy-connection"}
FAULTS = ("throttle", "error", "drop_before", "drop_after")  # one at most per request
KINDS = (*FAULTS, "latency")


@dataclass(frozen=True)
class FaultRates:
    """The probability of each fault per request (0 to 1), and where they apply."""

    throttle: float = 0.0
    error: float = 0.0
    drop_before: float = 0.0
    drop_after: float = 0.0
    latency: float = 0.0
    delay: float = 0.05  # the most latency added, in seconds
    operations: frozenset[str] = field(default_factory=frozenset)  # empty: every operation

    def __post_init__(self) -> None:
        for name in KINDS:
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise ValueError(f"{name} must be a probability from 0 to 1, not {value}")
        if self.throttle + self.error + self.drop_before + self.drop_after > 1:
            raise ValueError("throttle, error, drop_before and drop_after add up to more than 1")
        if not 0 <= self.delay <= 30:
            raise ValueError(f"delay must be 0 to 30 seconds, not {self.delay}")

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> FaultRates:
        known = {f.name for f in fields(cls)}
        unknown = set(document) - known
        if unknown:
            raise ValueError(f"unknown fields {sorted(unknown)}; known: {sorted(known)}")
        values = dict(document)
        if "operations" in values:
            values["operations"] = frozenset(values["operations"])
        return cls(**values)

    def to_json(self) -> dict[str, Any]:
        document = asdict(self)
        document["operations"] = sorted(self.operations)
        return document

    def applies_to(self, operation: str) -> bool:
        return not self.operations or operation in self.operations


NO_FAULTS = FaultRates()


def operation_of(target: str | None) -> str:
    """``DynamoDB_20120810.PutItem`` -> ``PutItem``."""
    return (target or "").rsplit(".", 1)[-1]


class FaultProxy:
    """The proxy: a threaded HTTP server on 127.0.0.1 and a free port, forwarding to
    ``upstream``. ``counts`` holds the faults injected, by (kind, operation)."""

    def __init__(self, upstream: str, *, port: int | None = None, seed: int | None = None) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"the upstream must be an http:// URL, not {upstream!r}")
        self.upstream = (parts.hostname, parts.port or 80)
        self.rates = NO_FAULTS
        self.scripted: dict[str, list[str]] = {}
        self.counts: Counter[tuple[str, str]] = Counter()
        self.forwarded: Counter[str] = Counter()
        self._random = random.Random(seed)
        self._lock = threading.Lock()
        self._server = _Server(self, port)
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FaultProxy:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def set(self, rates: FaultRates) -> None:
        with self._lock:
            self.rates = rates

    def clear(self) -> None:
        with self._lock:
            self.rates = NO_FAULTS
            self.scripted.clear()

    def script(self, operation: str, *kinds: str) -> None:
        """The next requests of ``operation`` get these faults, one each, in order (``"none"``
        forwards one unharmed), before the rates apply again: a test's exact sequence."""
        unknown = set(kinds) - {*FAULTS, "none"}
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}: {', '.join(FAULTS)} or none")
        with self._lock:
            self.scripted.setdefault(operation, []).extend(kinds)

    def injected(self, kind: str | None = None, operation: str | None = None) -> int:
        """How many faults of ``kind`` (any: None) were injected into ``operation`` (any)."""
        with self._lock:
            return sum(
                n
                for (k, o), n in self.counts.items()
                if (kind is None or k == kind) and (operation is None or o == operation)
            )

    def decide(self, operation: str) -> tuple[str | None, float]:
        """The fault for one request of ``operation`` (or None), and the latency to add."""
        with self._lock:
            if self.scripted.get(operation):
                fault: str | None = self.scripted[operation].pop(0)
                if fault == "none":
                    fault = None
                else:
                    self.counts[(str(fault), operation)] += 1
                if fault not in ("throttle", "error", "drop_before"):
                    self.forwarded[operation] += 1
                return fault, 0.0
            rates = self.rates
            if not rates.applies_to(operation):
                self.forwarded[operation] += 1
                return None, 0.0
            draw = self._random.random()
            delay = self._random.uniform(0, rates.delay) if self._random.random() < rates.latency else 0.0
            fault = None
            for kind in FAULTS:
                if draw < getattr(rates, kind):
                    fault = kind
                    break
                draw -= getattr(rates, kind)
            if delay:
                self.counts[("latency", operation)] += 1
            if fault is not None:
                self.counts[(fault, operation)] += 1
            if fault not in ("throttle", "error", "drop_before"):
                self.forwarded[operation] += 1
            return fault, delay

    def report(self) -> dict[str, Any]:
        with self._lock:
            return {
                "rates": self.rates.to_json(),
                "injected": {
                    f"{kind} {operation}": n for (kind, operation), n in sorted(self.counts.items())
                },
                "forwarded": dict(sorted(self.forwarded.items())),
            }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, proxy: FaultProxy, port: int | None) -> None:
        self.proxy = proxy
        # Never assume a port is free: a port taken between the choice and the bind is
        # chosen again.
        for attempt in range(5):
            try:
                super().__init__(("127.0.0.1", port or free_port()), _Handler)
                return
            except OSError:
                if port is not None or attempt == 4:
                    raise


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as botocore's connection pool expects
    server: _Server
    upstream: http.client.HTTPConnection | None = None

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        return  # one line per request would drown the test logs

    def do_GET(self) -> None:
        if self.path == CONTROL_PATH:
            self._answer(
                200, {"Content-Type": "application/json"}, json.dumps(self.server.proxy.report()).encode()
            )
        else:
            self._forward(self._body())

    def do_PUT(self) -> None:
        body = self._body()
        if self.path != CONTROL_PATH:
            self._forward(body)
            return
        try:
            rates = FaultRates.from_json(json.loads(body or b"{}"))
        except (ValueError, TypeError) as error:
            self._answer(
                400, {"Content-Type": "application/json"}, json.dumps({"message": str(error)}).encode()
            )
            return
        self.server.proxy.set(rates)
        self._answer(200, {"Content-Type": "application/json"}, json.dumps(rates.to_json()).encode())

    def do_POST(self) -> None:
        self._forward(self._body())

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _forward(self, body: bytes) -> None:
        operation = operation_of(self.headers.get("X-Amz-Target"))
        fault, delay = self.server.proxy.decide(operation)
        if delay:
            time.sleep(delay)
        if fault == "throttle":
            kind = THROTTLED_TRANSACTION if operation.startswith("Transact") else THROTTLED
            self._aws_error(
                400, kind, "The level of configured provisioned throughput for the table was exceeded"
            )
            return
        if fault == "error":
            self._aws_error(500, INTERNAL, "Internal server error")
            return
        if fault == "drop_before":
            self._drop()
            return
        try:
            status, headers, answer = self._send_upstream(body)
        except OSError:
            self._drop()  # DynamoDB Local went away: so does the answer
            return
        if fault == "drop_after":
            self._drop()
            return
        self._answer(status, headers, answer)

    def _send_upstream(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
        for attempt in range(2):
            if self.upstream is None:
                self.upstream = http.client.HTTPConnection(*self.server.proxy.upstream, timeout=60)
            try:
                self.upstream.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
                for name, value in self.headers.items():
                    if name.lower() not in HOP_BY_HOP:
                        self.upstream.putheader(name, value)
                self.upstream.putheader("Content-Length", str(len(body)))
                self.upstream.endheaders(body)
                response = self.upstream.getresponse()
                answer = response.read()
            except (http.client.HTTPException, OSError):
                self.upstream.close()
                self.upstream = None
                if attempt:
                    raise
                continue  # a kept-alive upstream connection closed meanwhile: once more
            headers = {k: v for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP}
            return response.status, headers, answer
        raise AssertionError("unreachable")

    def _aws_error(self, status: int, kind: str, message: str) -> None:
        body = json.dumps({"__type": kind, "message": message}).encode()
        self._answer(status, {"Content-Type": JSON_1_0, "x-amzn-RequestId": "fault-proxy"}, body)

    def _answer(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response_only(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def _drop(self) -> None:
        """Close the client's connection without a word: a reset, as a network fault."""
        self.close_connection = True
        try:
            self.connection.setsockopt(
                socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00"
            )
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def finish(self) -> None:
        super().finish()
        if self.upstream is not None:
            self.upstream.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack.faults", description=__doc__.split("\n\n")[0])
    parser.add_argument("--upstream", required=True, help="DynamoDB's endpoint, e.g. http://127.0.0.1:8000")
    parser.add_argument("--port", type=int, default=None, help="the port to listen on (default: a free one)")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--rates", default="{}", help="initial rates as JSON, e.g. '{\"throttle\": 0.05}'")
    args = parser.parse_args(argv)
    proxy = FaultProxy(args.upstream, port=args.port, seed=args.seed)
    proxy.set(FaultRates.from_json(json.loads(args.rates)))
    proxy.start()
    print(
        f"fault proxy on {proxy.endpoint} -> {args.upstream}; rates: PUT {proxy.endpoint}{CONTROL_PATH}",
        flush=True,
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        proxy.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
