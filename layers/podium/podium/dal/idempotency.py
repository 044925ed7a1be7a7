"""``Idempotency-Key`` for score submissions, on Powertools idempotency with DynamoDB.

A key belongs to one member's score route and is remembered for 24 hours. The same key
and body get the first answer again; the same key with another body is a 400; a
duplicate that arrives while the first is still being applied is a 409 to retry.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from podium.errors import Conflict, ValidationError

KEY_TTL_SECONDS = 24 * 3600
MAX_KEY_LENGTH = 255

Operation = Callable[[], dict[str, Any]]


@cache
def _idempotent_runner() -> tuple[Any, Callable[..., dict[str, Any]]]:
    from aws_lambda_powertools.utilities.idempotency import (
        DynamoDBPersistenceLayer,
        IdempotencyConfig,
        idempotent_function,
    )

    from podium.config import settings

    persistence = DynamoDBPersistenceLayer(table_name=settings().idempotency_table)
    config = IdempotencyConfig(
        event_key_jmespath="key",
        payload_validation_jmespath="body",
        expires_after_seconds=KEY_TTL_SECONDS,
    )

    @idempotent_function(  # type: ignore[untyped-decorator]
        data_keyword_argument="request", persistence_store=persistence, config=config
    )
    def run(request: dict[str, str], operation: Operation) -> dict[str, Any]:
        return operation()

    return config, run


def run_once(
    scope: str, key: str | None, body: str, operation: Operation, lambda_context: Any = None
) -> dict[str, Any]:
    """Run ``operation`` (which returns a JSON-safe answer) once per ``scope`` and key.

    The Lambda context lets Powertools give an in-progress record an expiry of the
    invocation's remaining time, so a crashed invocation does not block its key for 24 h.
    """
    if key is None:
        return operation()
    if not 1 <= len(key) <= MAX_KEY_LENGTH:
        raise ValidationError(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters")
    from aws_lambda_powertools.utilities.idempotency.exceptions import (
        IdempotencyAlreadyInProgressError,
        IdempotencyValidationError,
    )

    config, run = _idempotent_runner()
    if lambda_context is not None:
        config.register_lambda_context(lambda_context)
    try:
        return run(request={"key": f"{scope}#{key}", "body": body}, operation=operation)
    except IdempotencyValidationError as error:
        raise ValidationError(
            "this Idempotency-Key was already used with a different body; use a new key"
        ) from error
    except IdempotencyAlreadyInProgressError as error:
        raise Conflict("a request with this Idempotency-Key is still being applied; retry shortly") from error
