"""The stream consumers in a process of their own, as Lambda runs each function in
execution environments of its own: the stand-ins of the event source mappings
(``devstack.streams.StreamPoller``) and the functions they invoke.

In the stack's own process the consumers' Python waited for the API's: one interpreter runs
one thread at a time, and under load sixteen request threads took most of its turns, so a
batch took three times as long as it did alone (3.3 ms a record against 1 ms), and ranks
lagged writes past the contract's 2 s (docs/streams.md, "Fresh ranks"). Apart, each
process has an interpreter of its own, and the two cores are shared by the operating
system, as the API's and the consumers' Lambda environments are by AWS.

``python -m devstack`` starts it (``ConsumersApart``) once the tables, topics and queues
exist and the functions' environment is set; it inherits that environment. It answers on
``--ready-fd`` once every shard's iterator is positioned (so that ``LATEST`` means "from
the stack's start"), takes ``pause <Function> 1|0`` lines on its standard input (the test
control ``PUT /_devstack/streams/<Function>``) and answers each there once it holds, and
stops when its input closes: when the stack stops, or dies.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from devstack import template as template_module
from devstack.messaging import SQS_ENDPOINT
from devstack.streams import FailureDestination, StreamPoller

ROOT = Path(__file__).resolve().parent.parent
READY_TIMEOUT = 60.0

log = logging.getLogger("devstack.consumers")


@dataclass(frozen=True)
class ConsumerPlan:
    """What the process needs of one consumer, beyond the template: its table's stream, its
    on-failure queue (None: the JSON-lines file ``fallback``)."""

    function: str
    stream_arn: str
    queue_url: str | None
    fallback: str


class RemotePoller:
    """A consumer of the process, as the gateway's test control sees it."""

    def __init__(self, process: ConsumersApart, function: str) -> None:
        self.process = process
        self.function = function

    def pause(self, paused: bool) -> None:
        self.process.pause(self.function, paused)


class ConsumersApart:
    """The consumers' process, started by the stack and stopped by its PID."""

    def __init__(self, plans: list[ConsumerPlan], table_prefix: str, deliver_twice: bool) -> None:
        read_end, write_end = os.pipe()
        command = [
            sys.executable,
            "-m",
            "devstack.consumers",
            "--table-prefix",
            table_prefix,
            "--ready-fd",
            str(write_end),
            "--plans",
            json.dumps([asdict(plan) for plan in plans]),
        ]
        if deliver_twice:
            command.append("--deliver-twice")
        self.functions = [plan.function for plan in plans]
        self._process = subprocess.Popen(
            command, cwd=ROOT, stdin=subprocess.PIPE, text=True, pass_fds=(write_end,)
        )
        os.close(write_end)
        self._replies = os.fdopen(read_end)
        answer = _read_line(self._replies, READY_TIMEOUT)
        if answer.strip() != "ready":
            self.stop()
            raise RuntimeError(f"the stream consumers' process did not start (it said {answer!r})")

    @property
    def pid(self) -> int:
        return self._process.pid

    def pollers(self) -> dict[str, RemotePoller]:
        return {function: RemotePoller(self, function) for function in self.functions}

    def pause(self, function: str, paused: bool) -> None:
        stdin = self._process.stdin
        assert stdin is not None
        stdin.write(f"pause {function} {int(paused)}\n")
        stdin.flush()
        answer = _read_line(self._replies, READY_TIMEOUT)  # once the batch in hand is delivered
        if answer.strip() != "ok":
            raise RuntimeError(f"the stream consumers' process did not pause {function} (it said {answer!r})")

    def stop(self) -> None:
        """Close its input (it stops its pollers after the batches in hand), then wait for
        it; a process that does not stop is terminated, then killed."""
        if self._process.stdin is not None and not self._process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self._process.stdin.close()
        for stop in (None, self._process.terminate, self._process.kill):
            if stop is not None:
                stop()
            try:
                self._process.wait(timeout=15)
                break
            except subprocess.TimeoutExpired:
                continue
        self._replies.close()


def _read_line(stream: IO[str], timeout: float) -> str:
    import select

    ready, _, _ = select.select([stream], [], [], timeout)
    return stream.readline() if ready else ""


def start_pollers(
    spec: template_module.Template, plans: list[ConsumerPlan], deliver_twice: bool
) -> dict[str, StreamPoller]:
    """A poller thread for each planned consumer, started, by function."""
    import boto3

    from devstack.rawrecords import RawGetRecords

    consumers = {consumer.function: consumer for consumer in spec.stream_consumers()}
    streams_endpoint = (
        os.environ.get("AWS_ENDPOINT_URL_DYNAMODB_STREAMS") or os.environ["AWS_ENDPOINT_URL_DYNAMODB"]
    )
    streams = RawGetRecords().install(boto3.client("dynamodbstreams", endpoint_url=streams_endpoint))
    sqs: Any = boto3.client("sqs", endpoint_url=os.environ.get(SQS_ENDPOINT))
    pollers: dict[str, StreamPoller] = {}
    for plan in plans:
        destination = FailureDestination(plan.queue_url, sqs if plan.queue_url else None, Path(plan.fallback))
        poller = StreamPoller(
            consumers[plan.function], plan.stream_arn, streams, destination, deliver_twice=deliver_twice
        )
        poller.start()
        pollers[plan.function] = poller
    return pollers


def serve(args: argparse.Namespace) -> int:
    spec = template_module.read(args.table_prefix)
    plans = [ConsumerPlan(**raw) for raw in json.loads(args.plans)]
    pollers: dict[str, StreamPoller] = {}
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # stops the pollers on the way out
    try:
        pollers = start_pollers(spec, plans, args.deliver_twice)
        replies = os.fdopen(args.ready_fd, "w")
        replies.write("ready\n")
        replies.flush()
        for line in sys.stdin:  # until the stack closes it (or dies)
            command = line.split()
            if len(command) == 3 and command[0] == "pause" and command[1] in pollers:
                pollers[command[1]].pause(command[2] == "1")
            replies.write("ok\n")  # the pause holds: the batch in hand was delivered
            replies.flush()
    finally:
        started = time.monotonic()
        for poller in pollers.values():
            poller.stop()
        log.info("stream consumers stopped in %.1f s", time.monotonic() - started)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack.consumers", description=__doc__)
    parser.add_argument("--table-prefix", default="")
    parser.add_argument("--ready-fd", type=int, required=True)
    parser.add_argument("--plans", required=True, help="the consumers, as JSON (ConsumerPlan)")
    parser.add_argument("--deliver-twice", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    return serve(args)


if __name__ == "__main__":
    sys.exit(main())
