"""Domain errors. ``podium.http`` turns each into its HTTP status and JSON body, in one place."""

from __future__ import annotations

from collections.abc import Sequence


class PodiumError(Exception):
    status = 500
    code = "InternalError"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ValidationError(PodiumError):
    status = 400
    code = "ValidationError"


class Unauthorized(PodiumError):
    status = 401
    code = "Unauthorized"


class IssuerUnavailable(PodiumError):
    """The token issuer's signing keys could not be fetched and none usable is kept: the
    caller's token is not at fault, so this is a 500 the caller may retry, not a 401."""

    status = 500
    code = "InternalError"


class Forbidden(PodiumError):
    status = 403
    code = "Forbidden"


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
    """The database throttled, or other writers of the same item kept winning, and every
    retry within the budget was spent; the request changed nothing. ``retry_after``: the
    whole seconds a client should wait before trying again."""

    status = 429
    code = "Throttled"

    def __init__(self, message: str, retry_after: int = 1) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Contended(Throttled):
    """Optimistic attempts ran out: other writers kept changing what an attempt read (a
    member's items, a rivals list, a board's head, a node of a count tree) between its read
    and its conditional write, or a read kept seeing it change. Nothing was changed. A
    request answers 429 ``Throttled`` with ``Retry-After``, to be sent again shortly
    (``retry.contended`` words it); a stream consumer fails the record, and the stream
    delivers it again."""


class WriteRejected(PodiumError):
    """A write did not take effect for a reason the code does not expect: a transaction
    cancelled for a reason none of its conditions explains, or an item that an earlier
    write must have left is not there. ``message`` says what was rejected (a request
    answers it, 500 ``InternalError``); ``reasons`` (DynamoDB's cancellation codes) go to
    the log only, with the message. A stream consumer fails the record, and the stream
    delivers it again."""

    def __init__(self, message: str, reasons: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.reasons = tuple(reasons)

    def __str__(self) -> str:
        return f"{self.message}: {list(self.reasons)}" if self.reasons else self.message


class RateLimited(PodiumError):
    """A member submitted more often than its board's limits allow; ``retry_after`` is
    the whole seconds until the next clock minute, when it may submit again."""

    status = 429
    code = "RateLimited"

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class WriteUnconfirmed(PodiumError):
    """A write failed after an attempt that may have been applied (its answer lost, or a
    5xx): the one failure that may have changed something. ``refused`` is the error to
    answer instead once reading back shows that it was not applied. A client that sent an
    ``Idempotency-Key`` sends it again and learns the outcome; the message says so."""

    status = 500
    code = "InternalError"

    def __init__(self, message: str, refused: Exception | None = None) -> None:
        super().__init__(message)
        self.refused = refused


# What a conditional write to the database can come back with: the data-access layer
# raises these, the domain decides what they mean (retry, 404, already done).


class VersionConflict(Exception):
    """Another write changed the item between our read and our conditional write."""


class ItemMissing(Exception):
    """The item a conditional write expected is not there (deleted meanwhile)."""


class AlreadyApplied(Exception):
    """The mark of this stream record's effect exists: it was applied before."""


class HiddenChanged(Exception):
    """A member's first score of a period was written for a member hidden (or shown) as
    assumed, and its profile says otherwise now: write it again as ``hidden`` says."""

    def __init__(self, member_id: str, hidden: bool) -> None:
        super().__init__(member_id)
        self.hidden = hidden


class RecordsGone(Exception):
    """Stream records asked for by sequence number are no longer on the stream: past its
    24-hour retention, or their shard or the stream itself is gone."""
