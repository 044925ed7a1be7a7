"""The exceptions the client raises, one class per ``code`` of the API's error body.

Every error answers ``{"code", "message"}``; ``error_for`` picks the class by
that code, so ``except podium_client.NotFound`` reads like docs/api.md's error table. An
answer without such a body (a proxy's HTML page, say) becomes the class of its status.
"""

from __future__ import annotations

from typing import Any, ClassVar


class PodiumClientError(Exception):
    """Anything this client raises on purpose."""


class ApiError(PodiumClientError):
    """The service answered with an error: ``status``, ``code`` and ``message``."""

    api_code: ClassVar[str] = "Error"  # the body's ``code`` this class stands for

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


class ValidationError(ApiError):
    api_code = "ValidationError"


class Unauthorized(ApiError):
    api_code = "Unauthorized"


class Forbidden(ApiError):
    api_code = "Forbidden"


class NotFound(ApiError):
    api_code = "NotFound"


class Conflict(ApiError):
    """409: a board that exists with other fixed settings (final), or a transient conflict
    whose message tells the client to retry (a keyed duplicate still in flight, a fresh
    read with too many events waiting); the client retries the latter itself."""

    api_code = "Conflict"


class PayloadTooLarge(ApiError):
    api_code = "PayloadTooLarge"


class TooManyRequests(ApiError):
    """429 of either kind; ``retry_after`` is the seconds the ``Retry-After`` header asked
    for (None when it had none)."""

    api_code = "TooManyRequests"

    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(status, code, message)
        self.retry_after = retry_after


class Throttled(TooManyRequests):
    """The database (or a deployed API's route) was too busy; nothing changed."""

    api_code = "Throttled"


class RateLimited(TooManyRequests):
    """A member submitted more often than its board's ``limits`` allow."""

    api_code = "RateLimited"


class InternalError(ApiError):
    """5xx: the service failed. ``InternalError`` is its code; a gateway's 502/503/504
    comes here too."""

    api_code = "InternalError"


class TransportError(PodiumClientError):
    """The request got no answer (connection refused, reset, timed out) and the client's
    retries ran out, or it was not safe to retry."""


class TokenError(PodiumClientError):
    """A token provider could not get a token (the token endpoint refused, or answered
    something that is not a token)."""


_BY_CODE: dict[str, type[ApiError]] = {
    cls.api_code: cls
    for cls in (
        ValidationError,
        Unauthorized,
        Forbidden,
        NotFound,
        Conflict,
        PayloadTooLarge,
        Throttled,
        RateLimited,
        InternalError,
    )
}
_BY_STATUS: dict[int, type[ApiError]] = {
    400: ValidationError,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    429: Throttled,
}


def error_for(status: int, body: Any, retry_after: float | None) -> ApiError:
    """The exception for an error answer: by the body's ``code`` when it has one the API
    documents, else by the status (5xx: InternalError; any other: ApiError)."""
    code = body.get("code") if isinstance(body, dict) else None
    message = body.get("message") if isinstance(body, dict) else None
    cls = _BY_CODE.get(code) if isinstance(code, str) else None
    if cls is None:
        cls = InternalError if status >= 500 else _BY_STATUS.get(status, ApiError)
    text = message if isinstance(message, str) else f"HTTP {status}"
    code_text = code if isinstance(code, str) else cls.api_code
    if issubclass(cls, TooManyRequests):
        return cls(status, code_text, text, retry_after)
    return cls(status, code_text, text)
