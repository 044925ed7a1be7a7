"""The local stand-in for SNS and SQS: moto's server, and the template's topics and queues
on it.

``python -m devstack`` starts ``moto.server`` on a free port, unless
``AWS_ENDPOINT_URL_SNS`` names an SNS endpoint already; SQS goes to
``AWS_ENDPOINT_URL_SQS``, or to the SNS endpoint when that is unset, so that a queue can
subscribe to a topic. Moto runs as a child process of its own (stopped by its PID), not
in-process: in-process it would share its state with any ``moto.mock_aws`` of the same
interpreter, which resets every backend when it starts.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devstack.dynamodb_local import free_port, wait_for_port
from devstack.template import Template

SNS_ENDPOINT = "AWS_ENDPOINT_URL_SNS"
SQS_ENDPOINT = "AWS_ENDPOINT_URL_SQS"


@dataclass
class MotoServer:
    """``python -m moto.server`` on 127.0.0.1, in a process group of its own."""

    process: subprocess.Popen[bytes]
    port: int

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    def start(cls, port: int | None = None, log_path: Path | None = None) -> MotoServer:
        for _ in range(5):
            chosen = port or free_port()
            if log_path:
                log_path.parent.mkdir(parents=True, exist_ok=True)
            log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115
            process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(chosen)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                wait_for_port(chosen, timeout=30, process=process)
            except RuntimeError:
                if port is not None:
                    raise
                continue  # the port was taken between our check and moto's bind: try another
            except TimeoutError:
                cls(process, chosen).stop()
                raise
            return cls(process, chosen)
        raise RuntimeError("moto's server did not start on any of five free ports")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


@dataclass(frozen=True)
class Messaging:
    """The template's topics and queues on the local endpoints, by logical id."""

    sns_endpoint: str
    sqs_endpoint: str
    topics: dict[str, str] = field(default_factory=dict)  # logical id -> topic ARN
    queues: dict[str, str] = field(default_factory=dict)  # logical id -> queue URL

    @property
    def refs(self) -> dict[str, str]:
        """What ``!Ref`` gives for each: a topic's ARN, a queue's URL."""
        return {**self.topics, **self.queues}


def endpoints() -> tuple[str, str] | None:
    """The SNS and SQS endpoints of the environment; SQS defaults to the SNS endpoint."""
    sns = os.environ.get(SNS_ENDPOINT)
    if not sns:
        return None
    return sns, os.environ.get(SQS_ENDPOINT) or sns


def clients(sns_endpoint: str, sqs_endpoint: str) -> tuple[Any, Any]:
    import boto3

    return (
        boto3.client("sns", endpoint_url=sns_endpoint),
        boto3.client("sqs", endpoint_url=sqs_endpoint),
    )


def create_messaging(spec: Template, sns_endpoint: str, sqs_endpoint: str) -> Messaging:
    """Create every topic and queue of the template (both calls are idempotent) and return
    their ARNs and URLs."""
    sns, sqs = clients(sns_endpoint, sqs_endpoint)
    topics = {name: str(sns.create_topic(**request)["TopicArn"]) for name, request in spec.topics().items()}
    queues = {name: str(sqs.create_queue(**request)["QueueUrl"]) for name, request in spec.queues().items()}
    return Messaging(sns_endpoint, sqs_endpoint, topics, queues)
