"""HTTP glue shared by every API function: the resolver, request parsing helpers, and
the one place where domain errors become HTTP responses.

The resolver is ours, not Powertools' ``APIGatewayRestResolver``: importing anything
from ``aws_lambda_powertools.event_handler`` runs that package's ``__init__``, which
imports every resolver and every event data class, about half a bare ``import boto3``
on each cold start (docs/cold-start.md). A function here serves the one route that API
Gateway has already matched, so a resolver that reads the REST proxy event as the dict
it is does the same job. It keeps the interface and the answers of the one it replaces:
route decorators whose function gets the path's parameters as keyword arguments (taken
from the raw ``path`` by the same pattern, so a handler decodes them as before),
``current_event``, ``lambda_context``, and proxy results with ``multiValueHeaders``.

Every GET's 200 carries a strong ``ETag`` (a hash of its body) and ``Cache-Control:
no-cache``, and a GET whose ``If-None-Match`` names that tag is answered 304 with no body
(``conditional``): a client that polls an unchanged board gets a few bytes back instead
of the page (docs/api.md, "Conditional reads").
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from podium import numbers, validation
from podium.errors import PodiumError, RateLimited, Throttled, ValidationError
from podium.log import logger, metrics

if TYPE_CHECKING:
    from podium.access import Caller, Route
    from podium.models import BoardPolicy, Page

JSON = "application/json"

# A "<name>" segment of a route matches what Powertools' resolver matched: RFC 3986's
# unreserved and sub-delimiter characters, "%" escapes and \w, but never "/".
_PARAMETER = re.compile(r"<(\w+)>")
_SEGMENT = r"[-._~()'!*:@,;=+&$%<> \[\]{}|^\w]+"


class Response:
    """What a route answers: the status, the body as sent, and the headers."""

    def __init__(
        self,
        status_code: int,
        content_type: str | None = None,
        body: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.status_code = status_code
        self.body = body
        self.headers: dict[str, str] = dict(headers or {})
        if content_type:
            self.headers.setdefault("Content-Type", content_type)

    def to_proxy_result(self) -> dict[str, Any]:
        """The REST proxy integration's result (API Gateway reads ``multiValueHeaders``)."""
        return {
            "statusCode": self.status_code,
            "body": self.body,
            "isBase64Encoded": False,
            "multiValueHeaders": {name: [value] for name, value in self.headers.items()},
        }


class Headers(Mapping[str, str]):
    """A request's headers, whose names HTTP compares without case."""

    def __init__(self, raw: Mapping[str, str] | None) -> None:
        self._values = {name.lower(): value for name, value in (raw or {}).items()}

    def __getitem__(self, name: str) -> str:
        return self._values[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


class ProxyEvent:
    """An API Gateway REST proxy event, read as the dict it is."""

    def __init__(self, raw_event: Mapping[str, Any]) -> None:
        self.raw_event = raw_event

    @property
    def path(self) -> str:
        path: str = self.raw_event["path"]
        return path

    @property
    def http_method(self) -> str:
        method: str = self.raw_event["httpMethod"]
        return method

    @property
    def headers(self) -> Headers:
        return Headers(self.raw_event.get("headers"))

    @property
    def query_string_parameters(self) -> dict[str, str]:
        return dict(self.raw_event.get("queryStringParameters") or {})

    @property
    def authorizer(self) -> dict[str, Any] | None:
        """What the edge authorizer answered about the caller (``requestContext.authorizer``)."""
        found = (self.raw_event.get("requestContext") or {}).get("authorizer")
        return dict(found) if found else None

    @property
    def is_base64_encoded(self) -> bool:
        return bool(self.raw_event.get("isBase64Encoded"))

    @property
    def body(self) -> str | None:
        body: str | None = self.raw_event.get("body")
        return body

    @property
    def decoded_body(self) -> str | None:
        body = self.body
        if self.is_base64_encoded and body:
            return base64.b64decode(body.encode()).decode()
        return body


RouteFunction = TypeVar("RouteFunction", bound=Callable[..., Response])


def route_pattern(rule: str) -> re.Pattern[str]:
    """``/boards/<boardId>`` as a pattern with a named group per parameter; trailing
    slashes in the path are ignored, as API Gateway's REST resolver did."""
    body = _PARAMETER.sub(lambda found: f"(?P<{found.group(1)}>{_SEGMENT})", rule.rstrip("/"))
    return re.compile(f"^{body}/*$")


# What the HTTP API's $default route is called: the key of a request that no route matched.
DEFAULT_ROUTE = "$default"


class _Route:
    """One route of a function: its key as API Gateway names it (``GET /boards/{boardId}``),
    the pattern of its paths, the function that answers it, and the API's route that
    ``podium.access`` knows it by (None for the page's)."""

    def __init__(self, method: str, rule: str, function: Callable[..., Response]) -> None:
        from podium import access

        self.key = f"{method} {_PARAMETER.sub(lambda found: '{' + found.group(1) + '}', rule)}"
        self.method = method
        self.pattern = route_pattern(rule)
        self.function = function
        try:
            self.api_route: access.Route | None = access.Route(self.key)
        except ValueError:  # the page's routes, which anyone may call
            self.api_route = None


class Resolver:
    """Calls the route that matches a REST proxy event (the REST API's, or the HTTP API's
    in payload format 1.0: the same fields), and turns what it raises into the error
    response (``answer_error``)."""

    current_event: ProxyEvent
    lambda_context: Any
    route_key: str  # the matched route's key, or DEFAULT_ROUTE: the request's AccessPattern

    def __init__(self) -> None:
        self._routes: list[_Route] = []
        self._caller: Caller | None = None

    def route(self, rule: str, method: str) -> Callable[[RouteFunction], RouteFunction]:
        def register(function: RouteFunction) -> RouteFunction:
            self._routes.append(_Route(method.upper(), rule, function))
            return function

        return register

    def get(self, rule: str) -> Callable[[RouteFunction], RouteFunction]:
        return self.route(rule, "GET")

    def put(self, rule: str) -> Callable[[RouteFunction], RouteFunction]:
        return self.route(rule, "PUT")

    def post(self, rule: str) -> Callable[[RouteFunction], RouteFunction]:
        return self.route(rule, "POST")

    def delete(self, rule: str) -> Callable[[RouteFunction], RouteFunction]:
        return self.route(rule, "DELETE")

    def resolve(self, event: Mapping[str, Any], context: Any) -> dict[str, Any]:
        self.current_event = ProxyEvent(event)
        self.lambda_context = context
        self.route_key = DEFAULT_ROUTE
        self._caller = None
        method = self.current_event.http_method.upper()
        path = self.current_event.path
        try:
            response = self._call_route(method, path)
        except Exception as error:  # every failure answers, in the one place below
            response = answer_error(error)
        if method == "GET":
            response = conditional(response, self.current_event.headers.get("If-None-Match"))
        return response.to_proxy_result()

    def caller(self) -> Caller:
        """Who makes the current request (podium.identity), found once per request."""
        if self._caller is None:
            from podium import identity

            event = self.current_event
            self._caller = identity.caller_of(event.headers, event.authorizer)
        return self._caller

    def _call_route(self, method: str, path: str) -> Response:
        for route in self._routes:
            found = route.pattern.match(path) if route.method == method else None
            if found:
                self.route_key = route.key
                if route.api_route is not None:
                    # the edge authorizer's first cut, made here when none ran (the HTTP API;
                    # a REST route without one): the same 401 or 403 before a 400 as behind it
                    from podium import access

                    access.admit(self.caller(), route.api_route)
                return route.function(**found.groupdict())
        # Only the HTTP API's $default route sends a function a request none of its routes
        # match (the page's function: template.yaml), answered as the REST API's gateway does.
        return error_response(404, "NotFound", f"no route for {self.current_event.http_method} {path}")


def json_response(status: int, body: Any) -> Response:
    return Response(status_code=status, content_type=JSON, body=numbers.dumps(body))


def page_response(board_id: str, page: Page) -> Response:
    """The answer of a listing route (``top``, ``scores``): one envelope for both."""
    return json_response(
        200,
        {
            "boardId": board_id,
            "entries": [entry.to_json() for entry in page.entries],
            "total": page.total,
            "nextCursor": page.next_cursor,
        },
    )


def no_content() -> Response:
    return Response(status_code=204, content_type=None, body="")


def error_response(status: int, code: str, message: str) -> Response:
    return json_response(status, {"code": code, "message": message})


def answer_error(error: Exception) -> Response:
    """The one place where an error becomes an HTTP response: a domain error answers its
    own status and code; anything else is a 500 that says nothing about our internals."""
    if isinstance(error, PodiumError):
        if error.status >= 500:
            logger.exception("request failed")
        response = error_response(error.status, error.code, error.message)
        if isinstance(error, RateLimited | Throttled):
            response.headers["Retry-After"] = str(error.retry_after)
        return response
    logger.exception("unhandled error")
    return error_response(500, "InternalError", "the request failed on our side; it changed nothing")


# -- conditional reads: ETag and If-None-Match ----------------------------------------------

# A cache (the browser's, a proxy's) may keep a GET's answer but must ask again before each
# use: the tag makes asking cheap, and a board's answers change by the second.
REVALIDATE = "no-cache"


def entity_tag(body: str) -> str:
    """A strong validator of ``body``: the first 128 bits of its SHA-256, quoted. Equal
    bodies get equal tags in every function and every container, so the tag needs no
    state and a 304 is never wrong: it is given only when the body would be the same."""
    digest = hashlib.sha256(body.encode("utf-8")).digest()[:16]
    return '"' + base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii") + '"'


def none_match(header: str, tag: str) -> bool:
    """Whether an ``If-None-Match`` header names ``tag``: ``*``, or a comma-separated list
    compared weakly (RFC 9110, 13.1.2: a ``W/`` tag matches its strong twin)."""
    listed = {item.strip().removeprefix("W/") for item in header.split(",")}
    return "*" in listed or tag in listed


def conditional(response: Response, if_none_match: str | None) -> Response:
    """A GET's answer with its validator: a 200 gets ``ETag`` and ``Cache-Control``, and
    becomes a 304 with no body when the request's ``If-None-Match`` names its tag. Any
    other status is left alone (an error is never cached, nor a 304 given for one)."""
    if response.status_code != 200 or response.body is None:
        return response
    tag = entity_tag(response.body)
    validators = {"ETag": tag, "Cache-Control": REVALIDATE}
    if if_none_match and none_match(if_none_match, tag):
        return Response(status_code=304, body="", headers=validators)
    response.headers.update(validators)
    return response


def create_app() -> Resolver:
    return Resolver()


LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def entrypoint(app: Resolver, *, with_metrics: bool = False) -> LambdaHandler:
    """The function's handler: structured logs with the Lambda context, the request's
    metrics (what its DynamoDB requests consumed and read, and whether it answered an
    error: ``podium.telemetry``; unless REQUEST_METRICS=off), and (for the functions that
    publish metrics of their own) a flush of those after each invocation."""
    from podium import telemetry
    from podium.config import settings
    from podium.dal import usage

    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            metered = settings().request_metrics
        except Exception as error:  # settings refused (PODIUM_AUTH=off in AWS): 500, logged
            return answer_error(error).to_proxy_result()
        if not metered:
            return app.resolve(event, context)
        with usage.measuring() as used:
            result = app.resolve(event, context)
        telemetry.publish_request(app.route_key, int(result["statusCode"]), used)
        return result

    handler: LambdaHandler = lambda_handler
    if with_metrics:
        handler = metrics.log_metrics(handler, capture_cold_start_metric=True)
    return logger.inject_lambda_context(handler, clear_state=True)


def caller(app: Resolver) -> Caller:
    """Who makes the current request (podium.identity)."""
    return app.caller()


def authorize(
    app: Resolver,
    route: Route,
    board_id: str | None = None,
    *,
    policy: BoardPolicy | None = None,
    members: Iterable[str] = (),
    admin_fields: Iterable[str] = (),
) -> Caller:
    """403 or 401 unless the caller may make this request (podium.access decides). The
    board's policy is read (with ``board_id``) only when the decision depends on it (an
    anonymous read, a player's write); a route that has read it already passes ``policy``
    and no ``board_id`` (None then means that the board does not exist)."""
    from podium import access

    who = caller(app)
    if policy is None and board_id is not None and access.needs_board(who, route):
        from podium.wiring import services

        policy = services().boards.policy(board_id)
    access.require(who, route, board=policy, members=members, admin_fields=admin_fields)
    return who


def path_board(app: Resolver, raw: str) -> str:
    return validation.board_id(unquote(raw))


def path_member(app: Resolver, raw: str) -> str:
    return validation.member_id(unquote(raw))


def path_board_and_member(app: Resolver, raw_board: str, raw_member: str) -> tuple[str, str]:
    """The board and member ids of a ``/boards/<boardId>/members/<memberId>`` route, the
    board's validated first (so its error is the one answered when both are bad)."""
    return path_board(app, raw_board), path_member(app, raw_member)


def body(app: Resolver, *, required: bool = False) -> dict[str, Any]:
    event = app.current_event
    try:
        text = event.decoded_body if event.is_base64_encoded else event.body
    except ValueError:  # UnicodeDecodeError (and binascii.Error) are ValueErrors
        # A body that is not UTF-8 text comes base64-encoded (the local gateway sends it so,
        # as API Gateway does for binary media types), and JSON is UTF-8 text.
        raise ValidationError("the body is not valid JSON: it is not UTF-8 text") from None
    return validation.json_object(text, required=required)


def query(app: Resolver) -> dict[str, str]:
    return dict(app.current_event.query_string_parameters or {})
