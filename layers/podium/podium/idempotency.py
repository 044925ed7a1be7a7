"""``Idempotency-Key`` on score submissions: a submission sent again with the same key and
body is applied once, and answered as the first time.

A key is remembered by a record in the member's partition that holds the body's digest and
the answer, written in the same transaction as the score it answers for
(``MemberStore.write_score``). So the record exists exactly when the submission was
applied, whatever answers were lost on the way: a request the database applied but whose
answer a dropped connection lost, sent again by botocore; a client that got a 500 and
sends its request again. A record is kept for 24 hours.
"""

from __future__ import annotations

import hashlib
from decimal import Decimal

from podium.errors import ValidationError
from podium.models import ScoreChange
from podium.numbers import dumps
from podium.values import frozen

KEY_TTL_SECONDS = 24 * 3600
MAX_KEY_LENGTH = 255


@frozen
class SubmissionKey:
    """A submission's Idempotency-Key, and the digest of its body."""

    key: str
    body: str

    @classmethod
    def of(cls, key: str | None, value: Decimal) -> SubmissionKey | None:
        """The key of a request that sent one (None for one that did not)."""
        if key is None:
            return None
        if not 1 <= len(key) <= MAX_KEY_LENGTH:
            raise ValidationError(f"Idempotency-Key must be 1 to {MAX_KEY_LENGTH} characters")
        body = hashlib.sha256(dumps({"value": value}).encode("utf-8")).hexdigest()
        return cls(key, body)


@frozen
class RecordedSubmission:
    """What a key's record holds: the body's digest and the answer given."""

    body: str
    change: ScoreChange


def replay(key: SubmissionKey, recorded: RecordedSubmission) -> ScoreChange:
    """The first answer again, for the same body; 400 for another body."""
    if recorded.body != key.body:
        raise ValidationError("this Idempotency-Key was already used with a different body; use a new key")
    return recorded.change
