"""``python -m devstack redrive`` (``make redrive``): replay the stream records that failed
every retry, from the stream consumers' on-failure queue, through the consumer that failed
them (``podium.redrive``; the runbook is in docs/operations.md).

Locally, the default: against a running ``make run`` (or the endpoints in
``AWS_ENDPOINT_URL_DYNAMODB`` / ``_SNS`` / ``_SQS`` and ``--table-prefix``). It reads the
stack's StreamFailureQueue and the table's stream on DynamoDB Local, and runs the
consumer's handler in this process, as the local stack runs it.

Against a deployed stack, ``--aws --stack-name NAME`` (or ``--queue-url``), with the
operator's AWS credentials and region: the queue of the stack's output
StreamFailureQueueUrl, the stream through DynamoDB Streams, the consumer through a Lambda
``Invoke`` of the function each message names, filtered by its event source mapping's
filter criteria. It needs sqs:ReceiveMessage, sqs:DeleteMessage,
sqs:ChangeMessageVisibility, dynamodb:GetShardIterator, dynamodb:GetRecords,
lambda:InvokeFunction, lambda:ListEventSourceMappings and cloudformation:DescribeStacks.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any

from devstack.functions import FunctionPool
from devstack.messaging import SQS_ENDPOINT
from devstack.stack import NotRunning, attach
from devstack.template import StreamConsumer, Template
from podium.dal.streams import FailureQueue, LambdaConsumers, StreamRecords, stack_output
from podium.redrive import DISCARDED, GONE, Redrive

QUEUE_OUTPUT = "StreamFailureQueueUrl"


class LocalConsumers:
    """The template's stream consumers, run in this process (their names are their
    logical ids locally, as in the local stack's on-failure records)."""

    def __init__(self, spec: Template) -> None:
        self.consumers = {consumer.function: consumer for consumer in spec.stream_consumers()}
        self.pools: dict[str, FunctionPool] = {}

    def _consumer(self, function_arn: str) -> StreamConsumer:
        name = function_arn.rsplit(":", 1)[-1]
        if name not in self.consumers:
            raise LookupError(f"no stream consumer {name} in template.yaml: {', '.join(self.consumers)}")
        return self.consumers[name]

    def filters(self, function_arn: str, stream_arn: str) -> list[Any]:
        return list(self._consumer(function_arn).filters)

    def invoke(self, function_arn: str, event: dict[str, Any]) -> list[str]:
        consumer = self._consumer(function_arn)
        if consumer.function not in self.pools:
            self.pools[consumer.function] = FunctionPool(
                consumer.function, consumer.code_dir, consumer.handler
            )
        # The function's logs and metrics go to stderr, as `sam local invoke` sends them:
        # stdout is the redrive's report.
        with contextlib.redirect_stdout(sys.stderr):
            result = self.pools[consumer.function].invoke(event)
        failures = (result or {}).get("batchItemFailures") or []
        return [str(failure["itemIdentifier"]) for failure in failures]


def local_redrive(table_prefix: str) -> Redrive:
    spec, refs = attach(table_prefix)
    queues = sorted({c.on_failure for c in spec.stream_consumers() if c.on_failure})
    missing = [queue for queue in queues if queue not in refs]
    if not queues or missing:
        raise NotRunning(f"no SQS endpoint for the failure queue: start `make run`, or set {SQS_ENDPOINT}")
    if len(queues) > 1:
        raise NotRunning(f"the consumers send failures to several queues ({', '.join(queues)}); one expected")
    dynamodb = os.environ["AWS_ENDPOINT_URL_DYNAMODB"]
    return Redrive(
        FailureQueue(refs[queues[0]], endpoint_url=os.environ[SQS_ENDPOINT]),
        StreamRecords(endpoint_url=os.environ.get("AWS_ENDPOINT_URL_DYNAMODB_STREAMS") or dynamodb),
        LocalConsumers(spec),
    )


def aws_redrive(stack_name: str | None, queue_url: str | None) -> Redrive:
    if queue_url is None:
        if stack_name is None:
            raise NotRunning("--aws needs --stack-name (or --queue-url)")
        try:
            queue_url = stack_output(stack_name, QUEUE_OUTPUT)
        except LookupError:
            raise
        except Exception as error:  # no such stack, no credentials: a usage error
            raise NotRunning(f"the stack {stack_name}: {error}") from error
    return Redrive(FailureQueue(queue_url), StreamRecords(), LambdaConsumers())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--aws", action="store_true", help="against a deployed stack, with your AWS credentials and region"
    )
    parser.add_argument("--stack-name", help="the deployed stack (with --aws): its StreamFailureQueueUrl")
    parser.add_argument("--queue-url", help="the failure queue's URL (with --aws), instead of --stack-name")
    parser.add_argument("--dry-run", action="store_true", help="read and report, replay nothing")
    parser.add_argument(
        "--discard-gone",
        action="store_true",
        help="delete the messages whose records are past the stream's retention (check their boards first)",
    )


def main(args: argparse.Namespace) -> int:
    try:
        redrive = (
            aws_redrive(args.stack_name, args.queue_url) if args.aws else local_redrive(args.table_prefix)
        )
    except (NotRunning, LookupError) as error:
        print(error, file=sys.stderr)
        return 2
    print(f"redriving {redrive.queue}{' (dry run)' if args.dry_run else ''}", flush=True)
    report = redrive.run(dry_run=args.dry_run, discard_gone=args.discard_gone)
    for outcome in report.outcomes:
        print(outcome, flush=True)
    print(report.summary(), flush=True)
    if report.count(GONE):
        print(
            "records past the stream's 24-hour retention cannot be replayed: check the boards "
            "written at the time (`make verify BOARD=... REPAIR=1`), then remove their messages "
            "with --discard-gone",
            flush=True,
        )
    if report.count(DISCARDED):
        print(
            f"{report.count(DISCARDED)} message(s) whose records were gone deleted from the queue", flush=True
        )
    return 0 if report.ok else 1
