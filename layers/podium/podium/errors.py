"""Domain errors. ``podium.http`` turns each into its HTTP status and JSON body, in one place."""

from __future__ import annotations


class PodiumError(Exception):
    status = 500
    code = "InternalError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ValidationError(PodiumError):
    status = 400
    code = "ValidationError"


class NotFound(PodiumError):
    status = 404
    code = "NotFound"


class Conflict(PodiumError):
    status = 409
    code = "Conflict"


class PayloadTooLarge(PodiumError):
    status = 413
    code = "PayloadTooLarge"


class Throttled(PodiumError):
    status = 429
    code = "Throttled"
