"""A typed client for Podium's HTTP API (docs/api.md, docs/openapi.yaml).

    from decimal import Decimal
    from podium_client import PodiumClient, LocalIssuer

    with PodiumClient("http://127.0.0.1:3000", token=LocalIssuer("http://127.0.0.1:3000")) as podium:
        podium.create_board("images", shards=10)
        podium.put_member("images", "img-001.jpg", data={"owner": "ana"})
        podium.submit_score("images", "img-001.jpg", Decimal("11.2"))
        for entry in podium.iter_top("images"):
            print(entry.rank, entry.member_id, entry.score)

``PodiumClient(base_url, token=..., retry=RetryPolicy(...), timeout=..., transport=...)``
has one method per route:

* boards: ``create_board`` (create or confirm, ``PUT``), ``update_board`` (the settings
  that are not fixed), ``get_board``, ``list_boards`` / ``iter_boards``;
* members: ``put_member``, ``get_member`` (``fresh=``, ``period=``), ``delete_member``,
  ``submit_score`` (with an ``Idempotency-Key``, generated unless given);
* rankings: ``top`` / ``iter_top`` (``if_none_match=`` for a 304), ``rank``, ``around``,
  ``ranks``; each takes ``period=`` for time-windowed boards;
* events: ``log_events`` (``Event``s; an ``eventId`` generated for each that has none);
* rivals and notifications: ``get_rivals``, ``put_rivals``, ``notifications`` /
  ``iter_notifications``;
* snapshots: ``snapshots`` / ``iter_snapshots``.

Scores are ``decimal.Decimal`` both ways (a float is refused: its digits are already
binary). Results are frozen dataclasses (``Board``, ``Member``, ``Entry``, ``TopPage``,
``Rank``, ...). Errors are ``ApiError`` subclasses named by the API's codes
(``NotFound``, ``Conflict``, ``RateLimited`` with ``retry_after``, ...). Tokens: a string,
a callable, ``ClientCredentials`` (OAuth2 client credentials, e.g. Cognito) or
``LocalIssuer`` (the local stack's ``POST /_local/token``). docs/client.md says more.
"""

from podium_client.client import PodiumClient
from podium_client.errors import (
    ApiError,
    Conflict,
    Forbidden,
    InternalError,
    NotFound,
    PayloadTooLarge,
    PodiumClientError,
    RateLimited,
    Throttled,
    TokenError,
    TooManyRequests,
    TransportError,
    Unauthorized,
    ValidationError,
)
from podium_client.models import (
    AroundPage,
    Board,
    BoardPage,
    Entry,
    Event,
    Limits,
    Member,
    Notification,
    NotificationPage,
    NotModified,
    Rank,
    ScoreResult,
    Snapshot,
    SnapshotPage,
    TopPage,
)
from podium_client.resharding import ReshardProgress
from podium_client.retry import NO_RETRIES, RetryPolicy
from podium_client.tokens import CachedToken, ClientCredentials, LocalIssuer, RefreshableToken, local_token

__all__ = [
    "NO_RETRIES",
    "ApiError",
    "AroundPage",
    "Board",
    "BoardPage",
    "CachedToken",
    "ClientCredentials",
    "Conflict",
    "Entry",
    "Event",
    "Forbidden",
    "InternalError",
    "Limits",
    "LocalIssuer",
    "Member",
    "NotFound",
    "NotModified",
    "Notification",
    "NotificationPage",
    "PayloadTooLarge",
    "PodiumClient",
    "PodiumClientError",
    "Rank",
    "RateLimited",
    "RefreshableToken",
    "ReshardProgress",
    "RetryPolicy",
    "ScoreResult",
    "Snapshot",
    "SnapshotPage",
    "Throttled",
    "TokenError",
    "TooManyRequests",
    "TopPage",
    "TransportError",
    "Unauthorized",
    "ValidationError",
    "local_token",
]
