"""Read ``template.yaml``: the tables, topics, queues, API routes, stream consumers and
schedules it defines.

The local stack takes everything from the template, so that what runs here and what
``sam deploy`` creates cannot drift apart.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

if TYPE_CHECKING:
    from podium.config import Settings

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "template.yaml"

TOPIC = "AWS::SNS::Topic"
QUEUE = "AWS::SQS::Queue"
SECRET = "AWS::SecretsManager::Secret"  # noqa: S105 - a resource type
# The properties of a queue or topic that are also attributes of its create call.
QUEUE_ATTRIBUTES = (
    "DelaySeconds",
    "MaximumMessageSize",
    "MessageRetentionPeriod",
    "ReceiveMessageWaitTimeSeconds",
    "VisibilityTimeout",
    "SqsManagedSseEnabled",
    "FifoQueue",
    "ContentBasedDeduplication",
)
TOPIC_ATTRIBUTES = ("DisplayName", "FifoTopic", "ContentBasedDeduplication")
# EventBridge rate expressions: rate(1 minute), rate(5 minutes), rate(1 hour), rate(2 days).
RATE = re.compile(r"rate\(\s*(\d+)\s+(minute|minutes|hour|hours|day|days)\s*\)")
RATE_UNITS = {"minute": 60, "hour": 3600, "day": 86400}
DEFAULT_ASYNC_RETRIES = 2  # Lambda retries a failed asynchronous invocation twice


class UnresolvedReference(ValueError):
    """A ``!Ref`` to a resource the local stack has not created (a topic or a queue)."""


class _Tag:
    def __init__(self, tag: str, value: Any) -> None:
        self.tag = tag
        self.value = value

    def __repr__(self) -> str:
        return f"!{self.tag} {self.value!r}"


class _Loader(yaml.SafeLoader):
    pass


def _construct_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> _Tag:
    if isinstance(node, yaml.ScalarNode):
        value: Any = loader.construct_scalar(node)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)  # type: ignore[arg-type,unused-ignore]
    return _Tag(suffix, value)


_Loader.add_multi_constructor("!", _construct_tag)


def load(path: Path = TEMPLATE) -> dict[str, Any]:
    with open(path, encoding="utf-8") as handle:
        return dict(yaml.load(handle, Loader=_Loader))  # noqa: S506 - SafeLoader subclass


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    function: str
    code_dir: Path
    handler: str
    authorizer: str | None = None  # the API's authorizer that guards it; None: no token needed

    @property
    def pattern(self) -> re.Pattern[str]:
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.path))
        return re.compile(f"^{regex}/?$")


@dataclass(frozen=True)
class Authorizer:
    """A Lambda REQUEST authorizer of the API: its function, the headers that identify a
    caller (a request without them is refused with 401 before it is called), and how long
    API Gateway caches its answer per identity."""

    name: str
    function: str
    code_dir: Path
    handler: str
    identity_headers: tuple[str, ...]
    ttl_seconds: int


@dataclass(frozen=True)
class StreamConsumer:
    function: str
    code_dir: Path
    handler: str
    table: str
    batch_size: int
    batching_window: float
    starting_position: str
    max_retries: int
    bisect: bool
    filters: list[dict[str, Any]] = field(default_factory=list)
    on_failure: str | None = None


@dataclass(frozen=True)
class Schedule:
    """A ``Schedule`` event of a function: EventBridge invokes it every ``period_seconds``."""

    function: str
    code_dir: Path
    handler: str
    event_name: str
    expression: str
    period_seconds: float
    enabled: bool = True
    input: Any = None  # the event's Input, sent instead of the scheduled event when given
    max_retries: int = DEFAULT_ASYNC_RETRIES

    @property
    def rule_arn(self) -> str:
        return f"arn:aws:events:us-east-1:000000000000:rule/{self.function}{self.event_name}"


def rate_seconds(expression: str) -> float:
    """The period of an EventBridge rate expression, in seconds; ValueError for anything
    else (cron expressions included: the local stack runs rates only), and for a unit whose
    number disagrees with it (EventBridge refuses ``rate(1 minutes)`` and ``rate(5 minute)``)."""
    found = RATE.fullmatch(expression.strip())
    if found is None:
        raise ValueError(
            f"{expression!r}: the local stack runs rate(N minute|minutes|hour|hours|day|days) schedules only"
        )
    value, unit = int(found.group(1)), found.group(2)
    singular = unit.rstrip("s")
    if value < 1 or (value == 1) != (unit == singular):
        raise ValueError(
            f"{expression!r}: EventBridge wants rate(1 {singular}) or rate(N {singular}s), N > 1"
        )
    return float(value * RATE_UNITS[singular])


@dataclass
class Template:
    document: dict[str, Any]
    table_names: dict[str, str]
    prefix: str = ""  # the local name of a table, topic or queue is prefix + logical id

    @property
    def resources(self) -> dict[str, Any]:
        return dict(self.document.get("Resources", {}))

    def settings(self) -> Settings:
        """The service's settings for the template's two tables, under this prefix: what
        the functions' ``TABLE_NAME`` and ``STATE_TABLE_NAME`` say in the stack."""
        from podium.config import Settings

        return Settings(
            table_name=self.table_names["LeaderboardTable"], state_table_name=self.table_names["StateTable"]
        )

    def _functions(self) -> dict[str, dict[str, Any]]:
        return {
            name: resource.get("Properties", {})
            for name, resource in self.resources.items()
            if resource.get("Type") == "AWS::Serverless::Function"
        }

    def _code(self, properties: dict[str, Any]) -> tuple[Path, str]:
        return ROOT / properties["CodeUri"], properties.get("Handler", self._global("Handler"))

    def _global(self, name: str) -> Any:
        return self.document.get("Globals", {}).get("Function", {}).get(name)

    def routes(self) -> list[Route]:
        routes = []
        for name, properties in self._functions().items():
            for event in properties.get("Events", {}).values():
                if event.get("Type") != "Api":
                    continue
                code_dir, handler = self._code(properties)
                event_properties = event["Properties"]
                default = self._api_auth(event_properties).get("DefaultAuthorizer")
                chosen = (event_properties.get("Auth") or {}).get("Authorizer", default)
                routes.append(
                    Route(
                        method=str(event_properties["Method"]).upper(),
                        path=str(event_properties["Path"]),
                        function=name,
                        code_dir=code_dir,
                        handler=handler,
                        authorizer=None if chosen in (None, "NONE") else str(chosen),
                    )
                )
        return routes

    def door_routes(self, front_door: str) -> tuple[list[Route], Route | None]:
        """The routes the local stack serves as ``front_door`` (``rest`` or ``http``) and its
        ``$default`` route (the HTTP API's; None for the REST API)."""
        from devstack.httpdoor import HTTP  # it imports this module's Route

        if front_door == HTTP:
            return self.http_api_routes()
        return self.routes(), None

    def http_api_routes(self) -> tuple[list[Route], Route | None]:
        """The routes of the template's HTTP API (``AWS::ApiGatewayV2::Route``, under the
        ``HttpApi`` parameter's condition), each to the function its integration invokes,
        and its ``$default`` route (None without one): what the local stack serves as the
        HTTP door (``--front-door http``). Read from those resources, not from the REST
        API's events, so that a route missing from one door shows here too. No route has
        an authorizer: the functions check the token themselves."""
        integrations = {}
        for name, resource in self.resources.items():
            if resource.get("Type") != "AWS::ApiGatewayV2::Integration":
                continue
            properties = resource["Properties"]
            if str(properties.get("PayloadFormatVersion")) != "1.0":
                raise ValueError(f"{name}: the local HTTP door sends payload format 1.0 only")
            uri = properties["IntegrationUri"]
            if not (isinstance(uri, _Tag) and uri.tag == "GetAtt" and str(uri.value).endswith(".Arn")):
                raise ValueError(f"{name}: the local HTTP door needs IntegrationUri: !GetAtt <Function>.Arn")
            integrations[name] = str(uri.value).removesuffix(".Arn")
        functions = self._functions()
        routes: list[Route] = []
        default: Route | None = None
        for name, resource in self.resources.items():
            if resource.get("Type") != "AWS::ApiGatewayV2::Route":
                continue
            properties = resource["Properties"]
            if properties.get("AuthorizationType", "NONE") != "NONE":
                raise ValueError(f"{name}: the local HTTP door runs no authorizer")
            target = properties["Target"]
            found = re.fullmatch(r"integrations/\$\{(\w+)\}", str(getattr(target, "value", target)))
            if found is None:
                raise ValueError(f"{name}: Target must be !Sub integrations/${{<Integration>}}")
            function = integrations[found.group(1)]
            code_dir, handler = self._code(functions[function])
            key = str(properties["RouteKey"])
            if key == "$default":
                default = Route("*", key, function, code_dir, handler)
                continue
            method, path = key.split(" ", 1)
            routes.append(Route(method.upper(), path, function, code_dir, handler))
        return routes, default

    def _api_auth(self, event_properties: dict[str, Any]) -> dict[str, Any]:
        """The ``Auth`` of the API a route belongs to (its ``RestApiId``)."""
        api = event_properties.get("RestApiId")
        api_name = api.value if isinstance(api, _Tag) else None
        resource = self.resources.get(str(api_name), {}) if api_name else {}
        return dict(resource.get("Properties", {}).get("Auth") or {})

    def authorizers(self) -> dict[str, Authorizer]:
        """Every Lambda authorizer of the template's APIs, by name."""
        found = {}
        functions = self._functions()
        for resource in self.resources.values():
            if resource.get("Type") != "AWS::Serverless::Api":
                continue
            for name, spec in (
                (resource.get("Properties", {}).get("Auth") or {}).get("Authorizers") or {}
            ).items():
                arn = spec["FunctionArn"]
                function = arn.value.split(".")[0] if isinstance(arn, _Tag) else str(arn)
                identity = spec.get("Identity") or {}
                code_dir, handler = self._code(functions[function])
                found[name] = Authorizer(
                    name=name,
                    function=function,
                    code_dir=code_dir,
                    handler=handler,
                    identity_headers=tuple(identity.get("Headers") or ()),
                    ttl_seconds=int(identity.get("ReauthorizeEvery", 300)),
                )
        return found

    def gateway_responses(self) -> dict[str, tuple[int, str]]:
        """The status and JSON body template of each gateway response the APIs define."""
        found = {}
        for resource in self.resources.values():
            if resource.get("Type") != "AWS::Serverless::Api":
                continue
            for kind, spec in (resource.get("Properties", {}).get("GatewayResponses") or {}).items():
                body = (spec.get("ResponseTemplates") or {}).get("application/json", "")
                found[kind] = (int(spec.get("StatusCode", 500)), str(body))
        return found

    def stream_consumers(self) -> list[StreamConsumer]:
        consumers = []
        for name, properties in self._functions().items():
            for event in properties.get("Events", {}).values():
                if event.get("Type") != "DynamoDB":
                    continue
                p = event["Properties"]
                stream = p["Stream"]
                table = stream.value.split(".")[0] if isinstance(stream, _Tag) else str(stream)
                patterns = [json.loads(f["Pattern"]) for f in p.get("FilterCriteria", {}).get("Filters", [])]
                destination = p.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination")
                code_dir, handler = self._code(properties)
                consumers.append(
                    StreamConsumer(
                        function=name,
                        code_dir=code_dir,
                        handler=handler,
                        table=table,
                        batch_size=int(p.get("BatchSize", 100)),
                        batching_window=float(p.get("MaximumBatchingWindowInSeconds", 0)),
                        starting_position=str(p.get("StartingPosition", "TRIM_HORIZON")),
                        max_retries=int(p.get("MaximumRetryAttempts", -1)),
                        bisect=bool(p.get("BisectBatchOnFunctionError", False)),
                        filters=patterns,
                        on_failure=destination.value.split(".")[0] if isinstance(destination, _Tag) else None,
                    )
                )
        return consumers

    def schedules(self) -> list[Schedule]:
        """The functions' ``Schedule`` events, their expressions resolved with the
        parameters' defaults."""
        schedules = []
        for name, properties in self._functions().items():
            for event_name, event in properties.get("Events", {}).items():
                if event.get("Type") != "Schedule":
                    continue
                p = event.get("Properties", {})
                expression = str(self.resolve(p["Schedule"]))
                state = str(self.resolve(p.get("State", "ENABLED"))).upper()
                enabled = bool(self.resolve(p.get("Enabled", True))) and state == "ENABLED"
                raw_input = self.resolve(p.get("Input"))
                retries = properties.get("EventInvokeConfig", {}).get("MaximumRetryAttempts")
                code_dir, handler = self._code(properties)
                schedules.append(
                    Schedule(
                        function=name,
                        code_dir=code_dir,
                        handler=handler,
                        event_name=event_name,
                        expression=expression,
                        period_seconds=rate_seconds(expression),
                        enabled=enabled,
                        input=json.loads(raw_input) if raw_input is not None else None,
                        max_retries=DEFAULT_ASYNC_RETRIES if retries is None else int(retries),
                    )
                )
        return schedules

    # -- parameters, conditions and the intrinsic functions the local stack resolves --------

    def _parameters(self) -> dict[str, Any]:
        return dict(self.document.get("Parameters") or {})

    def parameter(self, name: str) -> str:
        """A parameter's value here: its default (``sam deploy`` may give another)."""
        parameters = self._parameters()
        if "Default" not in parameters.get(name, {}):
            raise ValueError(f"the local stack needs a Default for the template parameter {name}")
        return str(parameters[name]["Default"])

    def condition(self, name: str) -> bool:
        conditions = self.document.get("Conditions") or {}
        if name not in conditions:
            raise ValueError(f"no condition {name} in template.yaml")
        return bool(self.resolve(conditions[name]))

    def resolve(self, value: Any) -> Any:
        """A value with its intrinsic functions resolved, for the few that the local stack
        understands: ``!Ref`` to a parameter, ``!Sub`` of parameters, ``!If``, ``!Equals``."""
        if not isinstance(value, _Tag):
            return value
        if value.tag == "Ref" and value.value in self._parameters():
            return self.parameter(value.value)
        if value.tag == "Sub" and isinstance(value.value, str):
            return re.sub(r"\$\{([A-Za-z0-9]+)\}", lambda found: self.parameter(found.group(1)), value.value)
        if value.tag == "If":
            condition, when_true, when_false = value.value
            return self.resolve(when_true if self.condition(condition) else when_false)
        if value.tag == "Equals":
            left, right = value.value
            return str(self.resolve(left)) == str(self.resolve(right))
        raise ValueError(f"the local stack cannot resolve {value!r}")

    def tables(self) -> dict[str, dict[str, Any]]:
        """``create_table`` arguments for every DynamoDB table, keyed by logical id."""
        tables = {}
        for name, resource in self.resources.items():
            if resource.get("Type") != "AWS::DynamoDB::Table":
                continue
            p = resource["Properties"]
            request: dict[str, Any] = {
                "TableName": self.table_names.get(name, name),
                "AttributeDefinitions": p["AttributeDefinitions"],
                "KeySchema": p["KeySchema"],
                "BillingMode": "PAY_PER_REQUEST",
            }
            if p.get("GlobalSecondaryIndexes"):
                request["GlobalSecondaryIndexes"] = [
                    {k: v for k, v in index.items() if k in ("IndexName", "KeySchema", "Projection")}
                    for index in p["GlobalSecondaryIndexes"]
                ]
            if p.get("StreamSpecification"):
                request["StreamSpecification"] = {
                    "StreamEnabled": True,
                    "StreamViewType": p["StreamSpecification"]["StreamViewType"],
                }
            tables[name] = request
        return tables

    def time_to_live(self) -> dict[str, str]:
        return {
            name: resource["Properties"]["TimeToLiveSpecification"]["AttributeName"]
            for name, resource in self.resources.items()
            if resource.get("Type") == "AWS::DynamoDB::Table"
            and resource["Properties"].get("TimeToLiveSpecification", {}).get("Enabled")
        }

    def _of_type(self, kind: str) -> dict[str, dict[str, Any]]:
        return {
            name: dict(resource.get("Properties") or {})
            for name, resource in self.resources.items()
            if resource.get("Type") == kind
        }

    def topics(self) -> dict[str, dict[str, Any]]:
        """``sns.create_topic`` arguments for every SNS topic, keyed by logical id."""
        return self._create_requests(
            TOPIC, TOPIC_ATTRIBUTES, name_argument="Name", fifo_attribute="FifoTopic"
        )

    def queues(self) -> dict[str, dict[str, Any]]:
        """``sqs.create_queue`` arguments for every SQS queue, keyed by logical id."""
        return self._create_requests(
            QUEUE, QUEUE_ATTRIBUTES, name_argument="QueueName", fifo_attribute="FifoQueue"
        )

    def _create_requests(
        self, kind: str, attribute_names: tuple[str, ...], *, name_argument: str, fifo_attribute: str
    ) -> dict[str, dict[str, Any]]:
        """The create call's arguments for every resource of ``kind``, keyed by logical id:
        the local name (with the ``.fifo`` suffix that SNS and SQS require of a FIFO one)
        and the plain-valued attributes among ``attribute_names``."""
        requests = {}
        for name, properties in self._of_type(kind).items():
            attributes = _attributes(properties, attribute_names)
            suffix = ".fifo" if attributes.get(fifo_attribute) == "true" else ""
            request: dict[str, Any] = {name_argument: f"{self.prefix}{name}{suffix}"}
            if attributes:
                request["Attributes"] = attributes
            requests[name] = request
        return requests

    def environment(
        self,
        refs: Mapping[str, str] | None = None,
        unresolved: Literal["raise", "omit"] = "raise",
        overrides: Mapping[str, str] | None = None,
    ) -> dict[str, str]:
        """The functions' environment. ``!Ref`` to a table resolves to its local name; to a
        topic or a queue, to what ``refs`` gives for its logical id: the ARN of the topic
        or the URL of the queue the local stack created. A ``!Ref`` to a topic or queue
        missing from ``refs`` raises ``UnresolvedReference``, or with ``unresolved="omit"``
        leaves its variable out: a function then fails loudly instead of sending to a
        made-up name. ``overrides`` are what the local stack sets itself, in the template
        or not (its issuer; its cursor key, which in AWS no environment holds)."""
        refs = dict(refs or {})
        variables = dict(self._global("Environment").get("Variables", {}))
        for properties in self._functions().values():
            variables.update(properties.get("Environment", {}).get("Variables", {}))
        messaging = {n for n, r in self.resources.items() if r.get("Type") in (TOPIC, QUEUE)}
        # No Secrets Manager here: a secret's ARN is empty (the cursor key's: the local stack
        # passes its own key in CURSOR_KEY, podium.cursorkeys).
        secrets = {n for n, r in self.resources.items() if r.get("Type") == SECRET}
        resolved = {}
        missing = []
        for key, value in variables.items():
            if overrides and key in overrides:  # what the local stack sets itself (its issuer)
                resolved[key] = overrides[key]
            elif isinstance(value, _Tag) and value.tag in ("If", "Sub"):
                missing.append(f"{key} ({value!r})")  # resources the local stack does not make
            elif isinstance(value, _Tag) and value.tag == "Ref":
                if value.value in refs:
                    resolved[key] = refs[value.value]
                elif value.value in secrets:
                    resolved[key] = ""
                elif value.value in messaging:
                    missing.append(f"{key} (!Ref {value.value})")
                elif value.value in self._parameters():
                    resolved[key] = self.parameter(value.value)
                else:
                    resolved[key] = self.table_names.get(value.value, value.value)
            elif isinstance(value, _Tag):
                resolved[key] = self._resolve_find_in_map(value)
            else:
                resolved[key] = str(value)
        if missing and unresolved == "raise":
            raise UnresolvedReference(
                f"the local stack cannot resolve {', '.join(missing)}: "
                "start it first (it makes its topics, queues and token issuer)"
            )
        return {**resolved, **(overrides or {})}

    def _resolve_find_in_map(self, tag: _Tag) -> str:
        if tag.tag != "FindInMap":
            raise ValueError(f"the local stack cannot resolve {tag!r}")
        mapping, key, attribute = tag.value
        stage = self.document["Parameters"]["Stage"]["Default"]
        key = stage if isinstance(key, _Tag) else key
        return str(self.document["Mappings"][mapping][key][attribute])


def read(table_prefix: str = "") -> Template:
    document = load()
    names = {
        name: f"{table_prefix}{name}"
        for name, resource in document.get("Resources", {}).items()
        if resource.get("Type") == "AWS::DynamoDB::Table"
    }
    return Template(document=document, table_names=names, prefix=table_prefix)


def _attributes(properties: dict[str, Any], names: tuple[str, ...]) -> dict[str, str]:
    """The plain-valued properties among ``names``, as the string attributes the APIs take."""
    attributes = {}
    for name in names:
        value = properties.get(name)
        if value is None or isinstance(value, _Tag | dict | list):
            continue  # an intrinsic function: the local stack keeps the service's default
        attributes[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return attributes
