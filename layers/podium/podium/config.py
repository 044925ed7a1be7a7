"""Every setting of the service, in one validated model read from the environment on
first use (never at import time). A required setting that is missing fails with a message
that names it, when something first needs it."""

from __future__ import annotations

import os
import re
from decimal import Decimal
from functools import cache

from podium.values import frozen

DEFAULT_SHARD_QUERY_CONCURRENCY = 100  # every shard of a board (at most 100) at once
DEFAULT_SNAPSHOT_RETENTION_DAYS = 90
# The followers one notifier invocation tells of score changes, or forgets a deleted member
# in, at most (docs/streams.md, "Popular members: the fan-out in chunks", for why 500).
DEFAULT_FANOUT_CHUNK_SIZE = 500
MAX_FANOUT_CHUNK_SIZE = 5000
MAX_READ_CACHE_SECONDS = 1  # the head's 2 s of lag, less the stream's second
# Claims a player can change (OpenID Connect's profile claims, a Cognito user's standard
# and custom: attributes): as AUTH_MEMBER_CLAIM, a player would choose whose member it acts
# for. template.yaml's AuthMemberClaim refuses the same names (tests/unit/test_auth_template.py).
USER_WRITABLE_CLAIMS = frozenset(
    {
        "name", "given_name", "family_name", "middle_name", "nickname", "preferred_username",
        "profile", "picture", "website", "email", "email_verified", "gender", "birthdate",
        "zoneinfo", "locale", "phone_number", "phone_number_verified", "address", "updated_at",
    }
)  # fmt: skip
USER_WRITABLE_PREFIX = "custom:"
# The issuer of a Cognito user pool's tokens; its ID tokens carry attributes the user may
# change, so only its access tokens are taken (token_use).
COGNITO_ISSUER = re.compile(r"https://cognito-idp\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/[\w-]+")
# How long a write contended by other writers of the same item retries (podium.retry) before
# it answers 429 Throttled: tens of writers on one member all land within it, and a request
# still ends well inside API Gateway's 29 s.
CONTENTION_BUDGET_SECONDS = 5.0


class MissingSetting(RuntimeError):
    """A setting the function needs is not in its environment (a template or wiring error)."""


class AuthSwitchRefused(RuntimeError):
    """PODIUM_AUTH=off outside the local stack: the function refuses to serve (every request
    answers 500, this error's message in its log) rather than make every caller an admin."""


# Set by the local stack (devstack) alone, never by template.yaml: with it, and outside AWS
# Lambda, PODIUM_AUTH=off is honoured.
LOCAL_STACK_MARKER = "PODIUM_LOCAL_STACK"
# Set by the Lambda runtime in every function; reserved: a function's configuration can
# neither set nor remove them, so a copied marker does not make a deployed function local.
LAMBDA_RUNTIME_VARIABLES = ("AWS_LAMBDA_FUNCTION_NAME", "AWS_EXECUTION_ENV")


@frozen
class Settings:
    # The table whose stream feeds the consumers: members' profiles and scores, the event
    # log, the notifier's fan-out jobs (podium.dal.schema.streamed).
    table_name: str = ""
    # Everything kept from that stream or beside it (boards, counts, count trees, heads,
    # marks, leaders, inboxes, follower edges...), in a table without a stream: its writes
    # never reach the consumers, and the streamed table keeps few partitions, so its
    # stream's batches stay large (docs/data-model.md, "Two tables"). Empty: the same table.
    state_table_name: str = ""
    rank_index_name: str = "RankIndex"
    rank_index_b_name: str = "RankIndexB"  # the second ranking index, a re-shard's target
    notification_topic_arn: str = ""
    # Every shard of a board (at most 100) is queried at once: a round of shard queries
    # takes one round trip, not one per wave of threads.
    shard_query_concurrency: int = DEFAULT_SHARD_QUERY_CONCURRENCY
    snapshot_retention_days: int = DEFAULT_SNAPSHOT_RETENTION_DAYS
    fanout_chunk_size: int = DEFAULT_FANOUT_CHUNK_SIZE
    # Who may call: PODIUM_AUTH=off (the local stack only: refused in AWS Lambda, and
    # without LOCAL_STACK_MARKER) makes every caller an admin.
    auth_enabled: bool = True
    auth_issuer_url: str = ""
    auth_audiences: tuple[str, ...] = ()
    auth_member_claim: str = "sub"
    auth_jwks_url: str = ""  # empty: the issuer's OpenID configuration names it
    # Each API request's metrics line (podium.telemetry): REQUEST_METRICS=off saves its log
    # (docs/observability.md, "Cost") and leaves the dashboard's per-route cost widgets empty.
    request_metrics: bool = True
    # What signs cursors (podium.cursorkeys): in AWS, the ARN of the stack's secret, read at
    # the first cursor (only the functions that hand cursors out or take them have it); on
    # the local stack, which has no Secrets Manager, the key itself. With neither, a key of
    # the process's own: its cursors are then valid only in the instance that made them.
    cursor_secret_arn: str = ""
    cursor_key: str = ""
    # How long an instance keeps a board's layout (its shard count and re-shard): each
    # phase of a move waits this long, and the margin below, for every instance to see the
    # one before (podium.layouts).
    layout_cache_seconds: int = 5
    # How long an instance keeps what every ranking read of a board reads first (the board,
    # its count, its head) and its count tree's root (podium.recent): a hot board's reads
    # reach DynamoDB about once a second per warm instance. The head may lag writes by 2 s
    # (the stream takes about one): at most 1 s here. 0 keeps nothing; the template says 1.
    read_cache_seconds: float = 0
    # A request's longest time between reading a layout and its last write (API Gateway
    # gives up at 29 s): the rest of a move's wait between phases.
    reshard_margin_seconds: int = 30
    # How long one run of the re-shard worker moves items before it records where it got
    # to and stops (its Lambda timeout leaves room for that).
    reshard_budget_seconds: int = 45

    def __post_init__(self) -> None:
        if not 1 <= self.shard_query_concurrency <= 1000:
            raise ValueError(
                f"SHARD_QUERY_CONCURRENCY must be from 1 to 1000, not {self.shard_query_concurrency}"
            )
        if self.snapshot_retention_days < 1:
            days = self.snapshot_retention_days
            raise ValueError(f"SNAPSHOT_RETENTION_DAYS must be at least 1, not {days}")
        if not 1 <= self.layout_cache_seconds <= 300:
            raise ValueError(f"LAYOUT_CACHE_SECONDS must be from 1 to 300, not {self.layout_cache_seconds}")
        if not 0 <= self.read_cache_seconds <= MAX_READ_CACHE_SECONDS:
            seconds = self.read_cache_seconds
            raise ValueError(f"READ_CACHE_SECONDS must be from 0 to {MAX_READ_CACHE_SECONDS}, not {seconds}")
        if not 0 <= self.reshard_margin_seconds <= 300:
            margin = self.reshard_margin_seconds
            raise ValueError(f"RESHARD_MARGIN_SECONDS must be from 0 to 300, not {margin}")
        claim = self.auth_member_claim
        if claim in USER_WRITABLE_CLAIMS or claim.startswith(USER_WRITABLE_PREFIX):
            raise ValueError(
                f"AUTH_MEMBER_CLAIM must be a claim the player cannot change, such as sub, not {claim!r}"
            )
        if not 1 <= self.fanout_chunk_size <= MAX_FANOUT_CHUNK_SIZE:
            chunk = self.fanout_chunk_size
            raise ValueError(f"FANOUT_CHUNK_SIZE must be from 1 to {MAX_FANOUT_CHUNK_SIZE}, not {chunk}")

    @property
    def table(self) -> str:
        return _required(self.table_name, "TABLE_NAME", "the function has no table to use")

    @property
    def state_table(self) -> str:
        return self.state_table_name or self.table

    @property
    def notification_topic(self) -> str:
        return _required(self.notification_topic_arn, "NOTIFICATION_TOPIC_ARN", "notifications would be lost")

    @property
    def auth_issuer(self) -> str:
        return _required(self.auth_issuer_url, "AUTH_ISSUER", "no token can be checked")

    @property
    def auth_token_use(self) -> str | None:
        """What a token's ``token_use`` must say: ``access`` for a Cognito user pool (its
        ID tokens are refused), None for another OpenID Connect issuer."""
        return "access" if COGNITO_ISSUER.fullmatch(self.auth_issuer_url) else None

    @classmethod
    def from_environment(cls) -> Settings:
        return cls(
            table_name=os.environ.get("TABLE_NAME", ""),
            state_table_name=os.environ.get("STATE_TABLE_NAME", ""),
            rank_index_name=os.environ.get("RANK_INDEX_NAME", "RankIndex"),
            rank_index_b_name=os.environ.get("RANK_INDEX_B_NAME", "RankIndexB"),
            notification_topic_arn=os.environ.get("NOTIFICATION_TOPIC_ARN", ""),
            shard_query_concurrency=_integer("SHARD_QUERY_CONCURRENCY", DEFAULT_SHARD_QUERY_CONCURRENCY),
            snapshot_retention_days=_integer("SNAPSHOT_RETENTION_DAYS", DEFAULT_SNAPSHOT_RETENTION_DAYS),
            fanout_chunk_size=_integer("FANOUT_CHUNK_SIZE", DEFAULT_FANOUT_CHUNK_SIZE),
            auth_enabled=_auth_switch(),
            auth_issuer_url=os.environ.get("AUTH_ISSUER", "").rstrip("/"),
            auth_audiences=tuple(
                a.strip() for a in os.environ.get("AUTH_AUDIENCE", "").split(",") if a.strip()
            ),
            auth_member_claim=os.environ.get("AUTH_MEMBER_CLAIM") or "sub",
            auth_jwks_url=os.environ.get("AUTH_JWKS_URL", ""),
            cursor_secret_arn=os.environ.get("CURSOR_SECRET_ARN", ""),
            cursor_key=os.environ.get("CURSOR_KEY", ""),
            layout_cache_seconds=_integer("LAYOUT_CACHE_SECONDS", 5),
            read_cache_seconds=_number("READ_CACHE_SECONDS", 0),
            reshard_margin_seconds=_integer("RESHARD_MARGIN_SECONDS", 30),
            reshard_budget_seconds=_integer("RESHARD_BUDGET_SECONDS", 45),
            request_metrics=_switch("REQUEST_METRICS"),
        )


def _required(value: str, name: str, consequence: str) -> str:
    if not value:
        raise MissingSetting(f"{name} is not set: {consequence}")
    return value


def _integer(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number, not {raw!r}") from None


def _number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return float(Decimal(raw))
    except ArithmeticError:
        raise ValueError(f"{name} must be a number of seconds, not {raw!r}") from None


def _auth_switch() -> bool:
    if _switch("PODIUM_AUTH"):
        return True
    in_lambda = [name for name in LAMBDA_RUNTIME_VARIABLES if os.environ.get(name)]
    if in_lambda:
        raise AuthSwitchRefused(
            f"PODIUM_AUTH=off is for the local stack only (every caller would be an admin): this "
            f"function runs in AWS Lambda ({in_lambda[0]} is set) and refuses to serve; remove PODIUM_AUTH"
        )
    if os.environ.get(LOCAL_STACK_MARKER) != "1":
        raise AuthSwitchRefused(
            f"PODIUM_AUTH=off is for the local stack only (every caller would be an admin), and "
            f"{LOCAL_STACK_MARKER} is not set: refusing to serve; remove PODIUM_AUTH"
        )
    return False


def _switch(name: str) -> bool:
    raw = os.environ.get(name, "on").strip().lower()
    if raw not in ("on", "off"):
        raise ValueError(f"{name} must be on or off, not {raw!r}")
    return raw == "on"


@cache
def settings() -> Settings:
    return Settings.from_environment()
