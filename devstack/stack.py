"""The whole stack, locally and without Docker: DynamoDB Local, the tables of
``template.yaml``, its topics and queues on moto's server, the API, the stream
consumers and the schedules."""

from __future__ import annotations

import json
import logging
import os
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devstack import httpdoor
from devstack import template as template_module
from devstack.apidocs import ApiDocs
from devstack.consumers import ConsumerPlan, ConsumersApart, start_pollers
from devstack.dynamodb_local import DynamoDBLocal
from devstack.gateway import TEST_CONTROLS, ApiServer, EdgeAuth, Gateway
from devstack.issuer import LocalIssuer
from devstack.messaging import SNS_ENDPOINT, SQS_ENDPOINT, Messaging, MotoServer, create_messaging, endpoints
from devstack.schedules import ScheduleTimer
from devstack.streams import FailureDestination, StreamPoller
from podium.config import LOCAL_STACK_MARKER

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".devstack"
RUNNING = STATE / "running.json"  # where `python -m devstack invoke` finds a running stack

log = logging.getLogger("devstack")
AUTH_SWITCH = "PODIUM_AUTH"
FRONT_DOOR = "FRONT_DOOR"  # rest (the default) or http: which of the template's APIs to serve

LOCAL_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_REGION": "us-east-1",
}


def local_environment(issuer: LocalIssuer) -> dict[str, str]:
    """What the local stack sets in place of what AWS resources give the functions: its
    token issuer, a cursor key of its own (in AWS the functions read the stack's secret at
    run time; here, with no Secrets Manager, only this variable carries it), and a re-shard's
    margin for a request in flight that fits a local gateway's requests, not API Gateway's
    29 s (podium.layouts), so that a move's phases follow each other in seconds."""
    return {**issuer.environment, "CURSOR_KEY": secrets.token_urlsafe(32), "RESHARD_MARGIN_SECONDS": "3"}


def use_local_credentials() -> None:
    """DynamoDB Local accepts any credentials; never send real ones to it."""
    for key, value in LOCAL_CREDENTIALS.items():
        os.environ.setdefault(key, value)


class NotRunning(RuntimeError):
    """No local stack to attach to."""


def attach(table_prefix: str) -> tuple[template_module.Template, dict[str, str]]:
    """Point this process at the DynamoDB, topics and queues of a running ``make run`` (or
    of ``AWS_ENDPOINT_URL_DYNAMODB`` and ``AWS_ENDPOINT_URL_SNS`` / ``_SQS``, under
    ``table_prefix``) and set the functions' environment, so that a function can run here
    as it does in the stack (``invoke``, ``redrive``). The template, and the topics' ARNs
    and queues' URLs by logical id (empty without an SNS endpoint)."""
    use_local_credentials()
    prefix = table_prefix
    running = json.loads(RUNNING.read_text()) if RUNNING.exists() else None
    if not os.environ.get("AWS_ENDPOINT_URL_DYNAMODB"):
        if running is None:
            raise NotRunning("no local stack is running: start `make run` first")
        os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = running["dynamodb"]
        prefix = running["tablePrefix"]
    spec = template_module.read(prefix)
    refs: dict[str, str] = {}
    if (
        running is not None
        and running.get("sns")
        and running.get("tablePrefix") == prefix
        and os.environ.get(SNS_ENDPOINT, running["sns"]) == running["sns"]
    ):
        os.environ[SNS_ENDPOINT] = running["sns"]
        os.environ.setdefault(SQS_ENDPOINT, running["sqs"])
        refs = {**running["topics"], **running["queues"]}
    elif (found := endpoints()) is not None:
        os.environ[SNS_ENDPOINT], os.environ[SQS_ENDPOINT] = found
        refs = create_messaging(spec, *found).refs
    # The running stack's token issuer, and whether it checks tokens at all.
    issuer = dict(running.get("localEnvironment") or {}) if running is not None else {}
    if running is not None:
        os.environ[LOCAL_STACK_MARKER] = "1"
        os.environ[AUTH_SWITCH] = "on" if running.get("auth", True) else "off"
    try:
        spec.environment(refs, overrides=issuer)
    except template_module.UnresolvedReference as error:
        print(f"warning: {error} (start `make run`, or set {SNS_ENDPOINT})", file=sys.stderr)
    os.environ.update(spec.environment(refs, unresolved="omit", overrides=issuer))
    return spec, refs


def create_tables(client: Any, spec: template_module.Template) -> dict[str, str]:
    """Create every table of the template that is missing; return their stream ARNs."""
    existing = set(client.list_tables().get("TableNames", []))
    for request in spec.tables().values():
        if request["TableName"] not in existing:
            client.create_table(**request)
    for logical, attribute in spec.time_to_live().items():
        name = spec.table_names[logical]
        client.get_waiter("table_exists").wait(TableName=name)
        status = client.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        if status.get("TimeToLiveStatus") != "ENABLED":
            client.update_time_to_live(
                TableName=name, TimeToLiveSpecification={"Enabled": True, "AttributeName": attribute}
            )
    arns = {}
    for logical, request in spec.tables().items():
        description = client.describe_table(TableName=request["TableName"])["Table"]
        if description.get("LatestStreamArn"):
            arns[logical] = description["LatestStreamArn"]
    return arns


def failure_destination(
    consumer: template_module.StreamConsumer, messaging: Messaging, sqs: Any, fallback: Path
) -> FailureDestination:
    """The consumer's on-failure destination: the URL of the template's queue it names, or
    the JSON-lines file ``fallback`` when it names none."""
    if consumer.on_failure is None:
        return FailureDestination(None, None, fallback)
    if consumer.on_failure not in messaging.queues:
        raise ValueError(
            f"{consumer.function}: the on-failure destination {consumer.on_failure} is not an "
            "AWS::SQS::Queue of template.yaml; the local stack sends only to queues"
        )
    return FailureDestination(messaging.queues[consumer.on_failure], sqs, fallback)


@dataclass
class Stack:
    host: str = "127.0.0.1"
    port: int = 3000
    table_prefix: str = ""
    verbose: bool = False
    deliver_twice: bool = False
    schedule_seconds: float | None = None  # replaces every schedule's period (tests use it)
    db_path: Path | None = None  # DynamoDB Local on disk here (-dbPath), not in memory
    announce: bool = True  # write .devstack/running.json for `invoke` (not for a stack inside the bench)
    # The stream consumers in a process of their own (devstack/consumers.py), as `python -m
    # devstack` runs them; a bench that counts their requests in its own process keeps them here.
    consumers_apart: bool = False
    # Tokens checked as in AWS, against the stack's own issuer; PODIUM_AUTH=off: every caller is an admin.
    auth: bool = field(default_factory=lambda: os.environ.get(AUTH_SWITCH, "on").strip().lower() != "off")
    # The REST API's routes behind its edge authorizer, or the HTTP API's (HttpApi=on) with
    # none: the functions check the tokens (devstack/httpdoor.py).
    front_door: str = field(default_factory=lambda: os.environ.get(FRONT_DOOR, httpdoor.REST).strip().lower())
    issuer: LocalIssuer | None = None
    dynamodb: DynamoDBLocal | None = None
    moto: MotoServer | None = None
    messaging: Messaging | None = None
    api: ApiServer | None = None
    pollers: list[StreamPoller] = field(default_factory=list)
    apart: ConsumersApart | None = None
    timers: list[ScheduleTimer] = field(default_factory=list)

    @property
    def url(self) -> str:
        assert self.api is not None
        return f"http://{self.host}:{self.api.port}"

    def start(self) -> Stack:
        try:
            return self._start()
        except BaseException:
            self.stop()  # no DynamoDB Local or moto left behind by a start that failed
            raise

    def _start_messaging(self) -> tuple[str, str]:
        """The SNS and SQS endpoints: the environment's, or a moto server of our own."""
        found = endpoints()
        if found is None:
            self.moto = MotoServer.start(log_path=STATE / "moto.log")
            log.info("moto (SNS, SQS) %s (pid %d)", self.moto.endpoint, self.moto.pid)
            found = (self.moto.endpoint, os.environ.get(SQS_ENDPOINT) or self.moto.endpoint)
        os.environ[SNS_ENDPOINT], os.environ[SQS_ENDPOINT] = found
        return found

    def _start(self) -> Stack:
        import boto3

        use_local_credentials()
        if not os.environ.get("AWS_ENDPOINT_URL_DYNAMODB"):
            self.dynamodb = DynamoDBLocal.start(log_path=STATE / "dynamodb-local.log", db_path=self.db_path)
            os.environ["AWS_ENDPOINT_URL_DYNAMODB"] = self.dynamodb.endpoint
            log.info("DynamoDB Local %s (pid %d)", self.dynamodb.endpoint, self.dynamodb.pid)
        spec = template_module.read(self.table_prefix)
        client = boto3.client("dynamodb")
        stream_arns = create_tables(client, spec)

        sns_endpoint, sqs_endpoint = self._start_messaging()
        self.messaging = create_messaging(spec, sns_endpoint, sqs_endpoint)
        # The API's port is bound first: the issuer's URL (its tokens' iss, its JWKS) is on it.
        routes, default_route = spec.door_routes(self.front_door)
        gateway = Gateway(routes, front_door=self.front_door, default_route=default_route)
        self.api = ApiServer(gateway, self.host, self.port, self.verbose)
        self.issuer = gateway.issuer = LocalIssuer(self.url)
        gateway.docs = ApiDocs(self.url, auth=self.auth)
        if self.auth and not gateway.http_door:
            gateway.edge = EdgeAuth(spec.authorizers(), spec.gateway_responses())
        # The functions run in this process: their boto3 clients find SNS and SQS through
        # AWS_ENDPOINT_URL_SNS / _SQS, the topics and queues through these variables, and
        # the issuer whose tokens they accept through AUTH_*.
        local = local_environment(self.issuer)
        os.environ.update(spec.environment(self.messaging.refs, overrides=local))
        # The functions honour PODIUM_AUTH=off only with this marker, and never in AWS
        # Lambda (podium.config); template.yaml sets neither.
        os.environ[LOCAL_STACK_MARKER] = "1"
        os.environ[AUTH_SWITCH] = "on" if self.auth else "off"
        # The functions build their settings and services from that environment on first use;
        # anything this process built before (a bench running the stack inside) is forgotten.
        from podium import wiring

        wiring.reset()

        sqs = boto3.client("sqs", endpoint_url=sqs_endpoint)
        plans = [
            ConsumerPlan(
                consumer.function,
                stream_arns[consumer.table],
                failure_destination(consumer, self.messaging, sqs, Path()).queue_url,
                str(STATE / f"{self.table_prefix}{consumer.function}-failures.jsonl"),
            )
            for consumer in spec.stream_consumers()
        ]
        if self.consumers_apart:
            self.apart = ConsumersApart(plans, self.table_prefix, self.deliver_twice)
            log.info("stream consumers in a process of their own (pid %d)", self.apart.pid)
            consumers: dict[str, Any] = dict(self.apart.pollers())
        else:
            started = start_pollers(spec, plans, self.deliver_twice)
            self.pollers = list(started.values())
            consumers = dict(started)
        if os.environ.get(TEST_CONTROLS) == "1":
            gateway.consumers = consumers
        self.api.start()
        for schedule in spec.schedules():
            if schedule.enabled:
                timer = ScheduleTimer(schedule, self.schedule_seconds)
                timer.start()
                self.timers.append(timer)
        if not self.announce:
            return self
        STATE.mkdir(parents=True, exist_ok=True)
        RUNNING.write_text(
            json.dumps(
                {
                    "dynamodb": os.environ["AWS_ENDPOINT_URL_DYNAMODB"],
                    "tablePrefix": self.table_prefix,
                    "api": self.url,
                    "auth": self.auth,
                    "frontDoor": self.front_door,
                    "localEnvironment": local,
                    "sns": self.messaging.sns_endpoint,
                    "sqs": self.messaging.sqs_endpoint,
                    "topics": self.messaging.topics,
                    "queues": self.messaging.queues,
                }
            )
        )
        return self

    def stop(self) -> None:
        for timer in self.timers:
            timer.stop()  # first: a run in progress finishes while the database is still up
        if self.api is not None:
            self.api.stop()
            if self.announce:
                RUNNING.unlink(missing_ok=True)
        for poller in self.pollers:
            poller.stop()
        if self.apart is not None:
            self.apart.stop()
        if self.moto is not None:
            self.moto.stop()
            for key in (SNS_ENDPOINT, SQS_ENDPOINT):
                if os.environ.get(key) == self.moto.endpoint:
                    os.environ.pop(key)
        if self.dynamodb is not None:
            self.dynamodb.stop()
            os.environ.pop("AWS_ENDPOINT_URL_DYNAMODB", None)

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def serve_forever(stack: Stack) -> None:
    stack.start()
    print(f"Podium API on {stack.url}  (Ctrl-C stops everything)", flush=True)
    print(f"API docs (Swagger UI): {stack.url}/docs", flush=True)
    if stack.auth:
        print(
            f"Tokens required: `make token ROLE=admin` (or POST {stack.url}/_local/token); "
            "PODIUM_AUTH=off make run turns the checks off",
            flush=True,
        )
    else:
        print("PODIUM_AUTH=off: no token needed, every caller is an admin", flush=True)
    spec = template_module.read(stack.table_prefix)
    routes, default_route = spec.door_routes(stack.front_door)
    if stack.front_door == httpdoor.HTTP:
        print("The HTTP door (HttpApi=on): no edge authorizer, each function checks the token", flush=True)
    for route in routes:
        guard = "token" if route.authorizer else "token, or none on a publicRead board"
        if stack.front_door == httpdoor.HTTP:
            guard = "checked in the function"
        print(f"  {route.method:6} {route.path}  -> {route.function}  ({guard})", flush=True)
    if default_route is not None:
        print(f"  any other request ($default)  -> {default_route.function}  (404 NotFound)", flush=True)
    for timer in stack.timers:
        print(f"  {timer}  -> {timer.schedule.function}", flush=True)
    if stack.messaging is not None:
        print(f"SNS on {stack.messaging.sns_endpoint}, SQS on {stack.messaging.sqs_endpoint}", flush=True)
        for name, arn in stack.messaging.topics.items():
            print(f"  topic {name}: {arn}", flush=True)
        for name, url in stack.messaging.queues.items():
            print(f"  queue {name}: {url}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        print("\nstopping", flush=True)
    finally:
        stack.stop()
