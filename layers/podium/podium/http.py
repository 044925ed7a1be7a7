"""HTTP glue shared by every API function: the resolver, request parsing helpers, and
the one place where domain errors become HTTP responses."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response
from aws_lambda_powertools.event_handler.exceptions import NotFoundError

from podium import numbers, validation
from podium.errors import PodiumError
from podium.log import logger, metrics

JSON = "application/json"


def json_response(status: int, body: Any) -> Response[str]:
    return Response(status_code=status, content_type=JSON, body=numbers.dumps(body))


def no_content() -> Response[str]:
    return Response(status_code=204, content_type=None, body="")


def error_response(status: int, code: str, message: str) -> Response[str]:
    return json_response(status, {"code": code, "message": message})


def create_app() -> APIGatewayRestResolver:
    app = APIGatewayRestResolver()

    @app.exception_handler(PodiumError)  # type: ignore[untyped-decorator]
    def domain_error(error: PodiumError) -> Response[str]:
        if error.status >= 500:
            logger.exception("request failed")
        return error_response(error.status, error.code, error.message)

    @app.not_found
    def route_not_found(_: NotFoundError) -> Response[str]:
        path = app.current_event.path
        method = app.current_event.http_method
        return error_response(404, "NotFound", f"no route for {method} {path}")

    @app.exception_handler(Exception)  # type: ignore[untyped-decorator]
    def unexpected(_: Exception) -> Response[str]:
        logger.exception("unhandled error")
        return error_response(500, "InternalError", "the request failed on our side; it changed nothing")

    return app


LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


def entrypoint(app: APIGatewayRestResolver, *, with_metrics: bool = False) -> LambdaHandler:
    """The function's handler: structured logs with the Lambda context, and (for the
    functions that publish metrics) a flush of the metrics after each invocation."""

    def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return app.resolve(event, context)

    handler: LambdaHandler = lambda_handler
    if with_metrics:
        handler = metrics.log_metrics(handler, capture_cold_start_metric=True)
    return logger.inject_lambda_context(handler, clear_state=True)


def path_board(app: APIGatewayRestResolver, raw: str) -> str:
    return validation.board_id(unquote(raw))


def path_member(app: APIGatewayRestResolver, raw: str) -> str:
    return validation.member_id(unquote(raw))


def body(app: APIGatewayRestResolver, *, required: bool = False) -> dict[str, Any]:
    event = app.current_event
    text = event.decoded_body if event.is_base64_encoded else event.body
    return validation.json_object(text, required=required)


def query(app: APIGatewayRestResolver) -> dict[str, str]:
    return dict(app.current_event.query_string_parameters or {})
