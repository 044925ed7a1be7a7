"""Shared fixtures.

* Unit tests use moto, with tables built from ``template.yaml``.
* Integration tests use DynamoDB Local, which the session starts on a free port and
  stops by PID (or the DynamoDB at ``AWS_ENDPOINT_URL_DYNAMODB``, when that is set).
* End-to-end tests talk HTTP to the local stack (``python -m devstack``), which the
  session starts as a subprocess against that same DynamoDB, and against the SNS and SQS
  of moto's server, which the session starts too (or ``AWS_ENDPOINT_URL_SNS`` /
  ``AWS_ENDPOINT_URL_SQS``, when those are set). ``notification_tap`` and
  ``stream_failure_queue`` read what the stack sent there.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import settings as _hypothesis_settings
from xdist.scheduler import LoadScopeScheduling

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "layers" / "podium"), str(ROOT)]

from devstack import template as template_module  # noqa: E402
from devstack.dynamodb_local import DynamoDBLocal  # noqa: E402
from devstack.messaging import SNS_ENDPOINT, SQS_ENDPOINT, MotoServer  # noqa: E402
from devstack.processes import LocalServer  # noqa: E402
from devstack.stack import LOCAL_CREDENTIALS, create_tables  # noqa: E402
from podium.config import Settings  # noqa: E402
from podium_client import PodiumClient  # noqa: E402
from tests.messaging import LocalStack, QueueReader, TopicTap, stream_failures, subscribe_to_notifications  # noqa: E402

# No property test is timed: speed is `make bench`'s to show, and a busy machine is no bug.
_hypothesis_settings.register_profile("podium", deadline=None)
_hypothesis_settings.load_profile("podium")

for _key, _value in LOCAL_CREDENTIALS.items():
    os.environ[_key] = _value
# The functions take their Powertools names from the environment, as the template sets them.
for _key, _value in template_module.read().environment(unresolved="omit").items():
    if _key.startswith("POWERTOOLS_"):
        os.environ.setdefault(_key, _value)

# SNS and SQS endpoints given from outside go to the stack only. Left in this process's
# environment they would send the moto-mocked unit tests' boto3 clients there too.
EXTERNAL_SNS = os.environ.pop(SNS_ENDPOINT, "")
EXTERNAL_SQS = os.environ.pop(SQS_ENDPOINT, "")
# `make test` runs two pytest-xdist workers; each starts its own servers and logs.
WORKER = os.environ.get("PYTEST_XDIST_WORKER", "main")


# End-to-end modules that start local stacks of their own (``launch_stack``) and never
# touch the shared ones: each is a scope of its own, so it runs on whichever worker is
# free rather than after the shared stack's tests. They are among the longest e2e modules;
# with them on the e2e worker, the other worker finished minutes earlier and waited.
# Collection checks that none of them asks for a shared stack (pytest_collection_modifyitems).
OWN_STACK_MODULES = frozenset(
    f"tests/e2e/{name}.py"
    for name in (
        "test_crash",
        "test_event_fold",
        "test_faults",
        "test_http_door",
        "test_period_results",
        "test_redrive",
        "test_resharding",
        "test_snapshots",
    )
)
SHARED_STACK_FIXTURES = frozenset({"stack", "auth_stack"})
# Scopes to start before any other, longest first: the re-shard under 16 clients.
FIRST = ("tests/e2e/test_resharding.py",)


class LayerScheduling(LoadScopeScheduling):  # type: ignore[misc]  # xdist is untyped
    """``--dist loadgroup`` as this suite means it: every end-to-end test on the shared
    local stacks on one worker (one stack for them all), every DynamoDB Local integration
    test on the other, and the end-to-end modules with stacks of their own
    (``OWN_STACK_MODULES``) and the unit tests wherever there is room. xdist's own loadgroup
    reads ``xdist_group`` marks off node ids it rewrites, which pytest 9.2 no longer lets it
    do (pytest-xdist#1386): the marks were silently ignored, so both workers ran both kinds
    and each started a stack. Here the scope of a test is read from the node id as it is."""

    def _assign_work_unit(self, node: Any) -> None:
        """The scopes of ``FIRST`` go out before the others (xdist sends the scopes with the
        most tests first: the longest module, with three tests, went out last and kept a
        worker busy for ten minutes after the other had finished)."""
        for scope in FIRST:
            if scope in self.workqueue:
                self.workqueue.move_to_end(scope, last=False)
                break
        super()._assign_work_unit(node)

    def _split_scope(self, nodeid: str) -> str:
        module = nodeid.split("::", 1)[0]
        if module in OWN_STACK_MODULES:
            return module
        for layer in ("e2e", "integration"):
            if nodeid.startswith(f"tests/{layer}/"):
                return layer
        return nodeid


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A module of ``OWN_STACK_MODULES`` may run on the integration tests' worker: one that
    used a shared stack would start a second copy of it there."""
    for item in items:
        shared = SHARED_STACK_FIXTURES & set(getattr(item, "fixturenames", ()))
        if item.nodeid.split("::", 1)[0] in OWN_STACK_MODULES and shared:
            raise pytest.UsageError(f"{item.nodeid} uses {sorted(shared)}: take it out of OWN_STACK_MODULES")


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadScopeScheduling | None:
    if config.getvalue("dist") != "loadgroup":
        return None
    return LayerScheduling(config, log)


@contextmanager
def _external_or_started(
    external: str | None, server: type[DynamoDBLocal | MotoServer], log_name: str
) -> Iterator[str]:
    """The endpoint given from outside, when there is one; else a ``server`` of our own on
    a free port, logging to ``.devstack/{log_name}-{worker}.log``, stopped on the way out."""
    if external:
        yield external
        return
    started = server.start(log_path=ROOT / ".devstack" / f"{log_name}-{WORKER}.log")
    try:
        yield started.endpoint
    finally:
        started.stop()


@pytest.fixture(scope="session")
def dynamodb_endpoint() -> Iterator[str]:
    with _external_or_started(
        os.environ.get("AWS_ENDPOINT_URL_DYNAMODB"), DynamoDBLocal, "test-dynamodb-local"
    ) as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def own_dynamodb() -> Iterator[str]:
    """A DynamoDB Local of the module's own, empty: for the e2e modules whose stream
    consumers must keep up under load. The worker's session DynamoDB Local slows as it
    fills with every earlier test's tables and streams (a 20,000-member load took 150 s
    there and 22 s on one of its own)."""
    with _external_or_started(None, DynamoDBLocal, "test-own-dynamodb-local") as endpoint:
        yield endpoint


@pytest.fixture
def on_disk_dynamodb(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[DynamoDBLocal]:
    """A DynamoDB Local of the test's own that keeps its data in a folder (``-dbPath``), so
    that it can be killed and restarted on the same port with what it had."""
    name = request.node.name.split("[")[0]
    server = DynamoDBLocal.start(
        log_path=ROOT / ".devstack" / f"test-{name}-dynamodb-local-{WORKER}.log", db_path=tmp_path / "db"
    )
    try:
        yield server
    finally:
        server.stop()


@dataclass(frozen=True)
class OwnDatabase:
    """A database of a test's own inside the worker's DynamoDB Local. Without ``-sharedDb``
    DynamoDB Local keeps a database for each access key id and region, so a fresh key id
    gives an empty one in the same process: no start-up, and none of the session's tables
    and streams. A write to a table with a stream slows with every stream record of its
    database (the session's one, late in a run: 100 ms a put, against 2 ms in a fresh one),
    and ``tests.integration.test_period_results`` took 300 s there for 13 s on its own."""

    endpoint: str
    key_id: str

    def client(self, service: Literal["dynamodb", "dynamodbstreams"] = "dynamodb") -> Any:
        """A client of this database: DynamoDB's, or ``dynamodbstreams``."""
        import boto3

        return boto3.client(
            service,
            endpoint_url=self.endpoint,
            region_name=LOCAL_CREDENTIALS["AWS_DEFAULT_REGION"],
            aws_access_key_id=self.key_id,
            aws_secret_access_key=LOCAL_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        )

    def streams(self) -> Any:
        """A DynamoDB Streams client of this database."""
        return self.client("dynamodbstreams")


@pytest.fixture
def own_database(dynamodb_endpoint: str) -> Iterator[OwnDatabase]:
    """An empty database of the test's own in the worker's DynamoDB Local (``OwnDatabase``);
    its tables are deleted after the test."""
    database = OwnDatabase(dynamodb_endpoint, f"own{uuid.uuid4().hex[:12]}")
    yield database
    client = database.client()
    for page in client.get_paginator("list_tables").paginate():
        for table in page["TableNames"]:
            client.delete_table(TableName=table)


@pytest.fixture(scope="session")
def dynamodb_client(dynamodb_endpoint: str) -> Any:
    import boto3

    return boto3.client("dynamodb", endpoint_url=dynamodb_endpoint)


@pytest.fixture(scope="session")
def local_tables(dynamodb_client: Any) -> Settings:
    """The template's tables on DynamoDB Local, under a prefix of this session's own."""
    spec = template_module.read(f"it{uuid.uuid4().hex[:8]}-")
    create_tables(dynamodb_client, spec)
    return spec.settings()


@pytest.fixture
def moto_tables() -> Iterator[Settings]:
    """The template's tables inside moto (fast, for logic that is not DynamoDB's own behaviour)."""
    from moto import mock_aws

    with mock_aws():
        import boto3

        spec = template_module.read("unit-")
        create_tables(boto3.client("dynamodb", region_name="us-east-1"), spec)
        yield spec.settings()


@pytest.fixture(scope="session")
def aws_messaging_endpoint() -> Iterator[str]:
    """The SNS endpoint (and SQS, unless ``AWS_ENDPOINT_URL_SQS`` names another): moto's
    server, started on a free port as a process of its own and stopped by PID, or
    ``AWS_ENDPOINT_URL_SNS`` when that is set. Moto does not run inside this process
    because ``moto.mock_aws`` (the unit tests) resets the backends it shares with it."""
    with _external_or_started(EXTERNAL_SNS, MotoServer, "test-moto") as endpoint:
        yield endpoint


StackLauncher = Callable[..., AbstractContextManager[LocalStack]]


@pytest.fixture(scope="session")
def launch_stack(dynamodb_endpoint: str, aws_messaging_endpoint: str) -> StackLauncher:
    """Start a local stack, as ``python -m devstack`` on a free port, with its tables,
    topics and queues under a table prefix of its own, and ``extra_args`` on its command
    line: ``with launch_stack("--schedule-seconds", "2", name="snapshots") as other:``;
    ``dynamodb=endpoint`` runs it against another DynamoDB than the session's; every batch of
    its streams is delivered twice (proving the consumers idempotent) unless
    ``deliver_twice=False``, as Lambda delivers them."""

    @contextmanager
    def launch(
        *extra_args: str,
        name: str = "stack",
        auth: bool = False,
        dynamodb: str | None = None,
        deliver_twice: bool = True,
    ) -> Iterator[LocalStack]:
        log_path = ROOT / ".devstack" / f"test-{name}-{WORKER}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        sqs_endpoint = EXTERNAL_SQS or aws_messaging_endpoint
        env = {
            **os.environ,
            "AWS_ENDPOINT_URL_DYNAMODB": dynamodb or dynamodb_endpoint,
            SNS_ENDPOINT: aws_messaging_endpoint,
            SQS_ENDPOINT: sqs_endpoint,
            "PYTHONPATH": f"{ROOT / 'layers' / 'podium'}{os.pathsep}{ROOT}",
            "DEVSTACK_TEST_CONTROLS": "1",
            # Checks on only where a test is about them (``auth_stack``): every other test
            # calls as an admin, which is what PODIUM_AUTH=off makes every caller.
            "PODIUM_AUTH": "on" if auth else "off",
        }
        table_prefix = f"e2e{uuid.uuid4().hex[:8]}-"
        server = LocalServer.launch(
            lambda port: [
                sys.executable,
                "-m",
                "devstack",
                "--port",
                str(port),
                "--table-prefix",
                table_prefix,
                *(["--deliver-twice"] if deliver_twice else []),
                *extra_args,
            ],
            what="the local stack",
            log_path=log_path,
            cwd=ROOT,
            env=env,
        )
        try:
            yield LocalStack(
                url=server.endpoint,
                table_prefix=table_prefix,
                sns_endpoint=aws_messaging_endpoint,
                sqs_endpoint=sqs_endpoint,
                log_path=log_path,
            )
        finally:
            server.stop()

    return launch


@pytest.fixture(scope="session")
def stack(launch_stack: StackLauncher) -> Iterator[LocalStack]:
    """The local stack that the e2e tests share. Its schedules keep the template's rates:
    tests that need one to run often start a stack of their own (``launch_stack``)."""
    with launch_stack() as local:
        yield local


@pytest.fixture(scope="session")
def auth_stack(launch_stack: StackLauncher) -> Iterator[LocalStack]:
    """A local stack that checks tokens, as ``make run`` does: tokens come from its own
    issuer (``POST /_local/token``)."""
    with launch_stack(name="auth", auth=True) as local:
        yield local


@pytest.fixture(scope="session")
def stack_url(stack: LocalStack) -> str:
    """The base URL of the local stack's API."""
    return stack.url


@pytest.fixture
def set_clock(stack_url: str) -> Iterator[Callable[[str | None], None]]:
    """Moves the clock of the stack at ``stack_url`` (``PUT /_devstack/clock``: an ISO time,
    or None for the real time again); the real time comes back after the test."""
    import requests

    def move(now: str | None) -> None:
        response = requests.put(f"{stack_url}/_devstack/clock", json={"now": now}, timeout=30)
        assert response.status_code == 200, response.text

    yield move
    move(None)


@pytest.fixture
def notification_tap(stack: LocalStack) -> Iterator[TopicTap]:
    """A fresh SQS queue subscribed to the stack's NotificationTopic (raw delivery):
    ``tap.wait_for(lambda m: m.body["memberId"] == ...)``, ``m.attributes["type"]``."""
    tap = subscribe_to_notifications(stack)
    try:
        yield tap
    finally:
        tap.close()


@pytest.fixture(scope="session")
def stream_failure_queue(stack: LocalStack) -> QueueReader:
    """The stack's StreamFailureQueue. Reading takes messages off the queue and keeps them
    in ``received``, for the whole session: filter on what your test caused."""
    return stream_failures(stack)


@pytest.fixture
def podium(stack_url: str) -> Iterator[PodiumClient]:
    """The Python client (clients/python) of the stack at ``stack_url``: the shared stack,
    whose checks are off (every caller an admin), or the module's own stack where a module
    overrides ``stack_url``. Its timeout is generous for a busy machine; what it retries
    (429, 5xx, lost answers, a keyed duplicate in flight) is the client's, docs/client.md."""
    with PodiumClient(stack_url, timeout=60.0) as client:
        yield client
