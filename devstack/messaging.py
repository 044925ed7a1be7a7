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
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devstack.processes import LocalServer
from devstack.template import Template

SNS_ENDPOINT = "AWS_ENDPOINT_URL_SNS"
SQS_ENDPOINT = "AWS_ENDPOINT_URL_SQS"


class MotoServer(LocalServer):
    """``python -m moto.server`` on 127.0.0.1, in a process group of its own."""

    @classmethod
    def start(cls, port: int | None = None, log_path: Path | None = None) -> MotoServer:
        return cls.launch(
            lambda chosen: [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(chosen)],
            what="moto's server",
            port=port,
            log_path=log_path,
            timeout=30,
        )


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
