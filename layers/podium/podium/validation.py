"""Turning request bodies, path and query parameters into typed values, or a 4xx that
names the field and the limit."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

from podium import numbers
from podium.errors import PayloadTooLarge, ValidationError
from podium.models import (
    DEFAULT_SHARDS,
    MAX_ANNOUNCE_TOP,
    MAX_SHARDS,
    OPERATORS,
    ORDERS,
    RESETS,
    TIE_BREAKS,
    BoardPolicy,
    BoardSettings,
    Limits,
)
from podium.values import frozen

BOARD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
MEMBER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@~-]{0,199}")
MAX_BODY_BYTES = 256 * 1024
MAX_JSON_DEPTH = 32  # objects and arrays within each other, the body itself counted
MAX_DATA_BYTES = 64 * 1024
MAX_TITLE = 200
MAX_TOP_LIMIT = 1000
MAX_RADIUS = 50
MAX_RANKS_IDS = 100
MAX_ROLLUP_TARGETS = 5
MAX_RETAIN_PERIODS = 1000
MAX_EVENTS = 100
MAX_EVENT_ID = 128
MAX_RIVALS = 100
MAX_NOTIFICATIONS_LIMIT = 100
DEFAULT_RADIUS = 5
# Each listing's ?limit=: its default and its most.
PAGE_SIZES = {
    "top": (10, MAX_TOP_LIMIT),
    "scores": (10, MAX_TOP_LIMIT),
    "boards": (50, 100),
    "snapshots": (10, 100),
    "notifications": (20, MAX_NOTIFICATIONS_LIMIT),
}
# The fields of PUT .../members/{memberId} that only an admin may send.
ADMIN_MEMBER_FIELDS = ("score", "hidden")


def board_id(value: str) -> str:
    if not BOARD_ID.fullmatch(value):
        raise ValidationError("boardId must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$ (1 to 128 characters)")
    return value


def member_id(value: Any, field: str = "memberId") -> str:
    if not isinstance(value, str) or not MEMBER_ID.fullmatch(value):
        raise ValidationError(
            f"{field} must match ^[A-Za-z0-9][A-Za-z0-9._:@~-]{{0,199}}$ (1 to 200 characters)"
        )
    return value


def json_object(body: str | None, *, required: bool = False) -> dict[str, Any]:
    """Parse a request body that must be a JSON object (an empty body is ``{}`` unless required)."""
    if body is None or body.strip() == "":
        if required:
            raise ValidationError("a JSON object body is required")
        return {}
    if len(body.encode("utf-8")) > MAX_BODY_BYTES:
        raise PayloadTooLarge(f"the body is over the limit of {MAX_BODY_BYTES} bytes (256 KiB)")
    try:
        parsed = numbers.loads(body)
    except RecursionError:
        raise ValidationError(f"the body nests deeper than {MAX_JSON_DEPTH} levels") from None
    except ValueError as error:
        raise ValidationError(f"the body is not valid JSON: {error}") from error
    if not isinstance(parsed, dict):
        raise ValidationError("the body must be a JSON object")
    _check_tree(parsed)
    return parsed


def _check_tree(body: dict[str, Any]) -> None:
    """Refuse, naming the place, what parses as JSON but no later step can handle: nesting
    deeper than ``MAX_JSON_DEPTH`` (the encoders recurse), and a string or key that holds a
    lone UTF-16 surrogate (``"\\ud800"``: valid JSON, not valid Unicode, so it cannot be
    encoded to store or to answer). Iterative, so a deep body cannot exhaust the stack."""
    stack: list[tuple[dict[str, Any] | list[Any], int, str]] = [(body, 1, "")]
    while stack:
        node, depth, path = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise ValidationError(f"{path or 'the body'} nests deeper than {MAX_JSON_DEPTH} levels")
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(key, str):
                _unicode(key, f"a key in {path or 'the body'}")
            # only strings and containers need a look: numbers, booleans and null are fine
            if isinstance(value, str):
                _unicode(value, _child(path, key))
            elif isinstance(value, dict | list):
                stack.append((value, depth + 1, _child(path, key)))


def _child(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _unicode(text: str, where: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValidationError(
            f"{where} holds a lone UTF-16 surrogate (a \\ud800-\\udfff escape without its pair): "
            "not valid Unicode"
        ) from None


def _only(body: dict[str, Any], allowed: tuple[str, ...], within: str = "") -> None:
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise ValidationError(
            f"unknown field {within + unknown[0]!r}; the fields allowed here are {', '.join(allowed)}"
        )


def _choice(body: dict[str, Any], name: str, choices: tuple[str, ...]) -> str:
    value = body.get(name, choices[0])
    if value not in choices:
        raise ValidationError(f"{name} must be one of {', '.join(choices)}")
    return str(value)


def _integer(value: Any, name: str, low: int, high: int) -> int:
    """``value`` as an int in ``[low, high]``. The range is checked on the Decimal, before
    any conversion: ``int(Decimal("1E1000000"))`` builds a million-digit number, seconds
    of CPU for one request, while comparing it with ``high`` is instant."""
    refused = ValidationError(f"{name} must be an integer from {low} to {high}")
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        raise refused
    if isinstance(value, Decimal) and not value.is_finite():
        raise refused
    if not low <= value <= high:
        raise refused
    if isinstance(value, Decimal) and value != value.to_integral_value():
        raise refused
    return int(value)


@frozen
class BoardRequest:
    settings: BoardSettings
    title: str | None
    # The policy's parts, None when left out (each keeps its value); Limits() removes limits.
    client_writes: bool | None = None
    public_read: bool | None = None
    limits: Limits | None = None
    announce_top: int | None = None

    def policy(self, current: BoardPolicy) -> BoardPolicy:
        """``current`` with what this request gives in place of what it left out."""
        return BoardPolicy(
            client_writes=current.client_writes if self.client_writes is None else self.client_writes,
            public_read=current.public_read if self.public_read is None else self.public_read,
            limits=current.limits if self.limits is None else self.limits,
            announce_top=current.announce_top if self.announce_top is None else self.announce_top,
        )


def _rollup_targets(body: dict[str, Any], own_id: str) -> tuple[str, ...]:
    targets = body.get("rollupTo", [])
    if not isinstance(targets, list) or len(targets) > MAX_ROLLUP_TARGETS:
        raise ValidationError(f"rollupTo must be a list of at most {MAX_ROLLUP_TARGETS} board ids")
    for target in targets:
        if not isinstance(target, str) or not BOARD_ID.fullmatch(target):
            raise ValidationError("rollupTo must hold board ids (^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$)")
    if own_id in targets:
        raise ValidationError(f"rollupTo cannot name the board itself ({own_id})")
    if len(set(targets)) != len(targets):
        raise ValidationError("rollupTo names a board more than once")
    return tuple(targets)


def _flag(body: dict[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise ValidationError(f"{name} must be true or false")
    return value


MAX_SUBMISSIONS_PER_MINUTE = 6000


def limits(body: dict[str, Any]) -> Limits | None:
    """The board's ``limits``: None when left out; ``{}`` (no limits) removes them."""
    if "limits" not in body:
        return None
    given = body["limits"]
    if not isinstance(given, dict):
        raise ValidationError("limits must be a JSON object (minValue, maxValue, maxSubmissionsPerMinute)")
    _only(given, ("minValue", "maxValue", "maxSubmissionsPerMinute"), "limits.")
    low = numbers.check_score(given["minValue"], "limits.minValue") if "minValue" in given else None
    high = numbers.check_score(given["maxValue"], "limits.maxValue") if "maxValue" in given else None
    if low is not None and high is not None and low > high:
        raise ValidationError(f"limits.minValue ({low}) is above limits.maxValue ({high})")
    per_minute = given.get("maxSubmissionsPerMinute")
    if per_minute is not None:
        per_minute = _integer(per_minute, "limits.maxSubmissionsPerMinute", 1, MAX_SUBMISSIONS_PER_MINUTE)
    return Limits(min_value=low, max_value=high, max_submissions_per_minute=per_minute)


def within_limits(value: Decimal, board_limits: Limits, field: str = "value") -> None:
    """400 naming the limit when ``value`` lies outside the board's minValue..maxValue."""
    if board_limits.min_value is not None and value < board_limits.min_value:
        raise ValidationError(
            f"{field} {value} is below the board's limits.minValue {board_limits.min_value}"
        )
    if board_limits.max_value is not None and value > board_limits.max_value:
        raise ValidationError(
            f"{field} {value} is above the board's limits.maxValue {board_limits.max_value}"
        )


def board_request(body: dict[str, Any], own_id: str = "") -> BoardRequest:
    _only(
        body,
        (
            "order",
            "operator",
            "tieBreak",
            "shards",
            "title",
            "rollupTo",
            "reset",
            "retainPeriods",
            "clientWrites",
            "publicRead",
            "limits",
            "announceTop",
        ),
    )
    title = body.get("title")
    if title is not None and (not isinstance(title, str) or len(title) > MAX_TITLE):
        raise ValidationError(f"title must be a string of at most {MAX_TITLE} characters")
    settings = BoardSettings(
        order=_choice(body, "order", ORDERS),
        operator=_choice(body, "operator", OPERATORS),
        tie_break=_choice(body, "tieBreak", TIE_BREAKS),
        shards=_integer(body.get("shards", DEFAULT_SHARDS), "shards", 1, MAX_SHARDS),
        rollup_to=_rollup_targets(body, own_id),
        reset=_choice(body, "reset", RESETS),
        retain_periods=_integer(body.get("retainPeriods", 12), "retainPeriods", 1, MAX_RETAIN_PERIODS),
    )
    return BoardRequest(
        settings=settings,
        title=title,
        client_writes=_flag(body, "clientWrites"),
        public_read=_flag(body, "publicRead"),
        limits=limits(body),
        announce_top=announce_top(body, settings.reset),
    )


def announce_top(body: dict[str, Any], reset: str) -> int | None:
    """``announceTop``: None when left out. Only a board whose periods end announces their
    results, so on a board that never resets the setting would do nothing: 400, rather than
    accept a setting that is silently ignored (docs/periods.md)."""
    if "announceTop" not in body:
        return None
    if reset == "never":
        raise ValidationError(
            "announceTop is a setting of boards that reset (daily, weekly or monthly): "
            "this request's reset is never (reset is fixed at creation: repeat it)"
        )
    return _integer(body["announceTop"], "announceTop", 0, MAX_ANNOUNCE_TOP)


@frozen
class MemberRequest:
    data: dict[str, Any] | None
    score: Decimal | None
    # Hide (True) or show (False) the member; None leaves it as it is. An admin's field:
    # the request carries it so that the access check can refuse it to anyone else.
    hidden: bool | None = None


def member_request(body: dict[str, Any]) -> MemberRequest:
    _only(body, ("data", "score", "hidden"))
    data = body.get("data")
    if "data" in body:
        if not isinstance(data, dict):
            raise ValidationError("data must be a JSON object")
        _storable_numbers(data, "data")
        size = len(numbers.dumps(data).encode("utf-8"))
        if size > MAX_DATA_BYTES:
            raise PayloadTooLarge(
                f"data is {size} bytes once serialised, over the limit of {MAX_DATA_BYTES} bytes (64 KiB)"
            )
    score = numbers.check_score(body["score"], "score") if "score" in body else None
    hidden = body.get("hidden")
    if "hidden" in body and not isinstance(hidden, bool):
        raise ValidationError("hidden must be true or false")
    return MemberRequest(data=data, score=score, hidden=hidden)


def _storable_numbers(tree: dict[str, Any], path: str) -> None:
    """Refuse, naming where, a number in ``tree`` (member data: any JSON) that DynamoDB's
    Number type cannot hold exactly (it would fail at the write, or be rounded)."""
    stack: list[tuple[dict[str, Any] | list[Any], str]] = [(tree, path)]
    while stack:
        node, where = stack.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, value in items:
            if isinstance(value, Decimal) and not numbers.storable(value):
                raise ValidationError(
                    f"{_child(where, key)} must have at most {numbers.MAX_SIGNIFICANT_DIGITS} significant "
                    "digits and a magnitude from 1e-130 to below 1e126 (a number in data is kept exactly)"
                )
            if isinstance(value, dict | list):
                stack.append((value, _child(where, key)))


def score_value(body: dict[str, Any]) -> Decimal:
    _only(body, ("value",))
    if "value" not in body:
        raise ValidationError("value is required")
    return numbers.check_score(body["value"], "value")


def member_ids(body: dict[str, Any]) -> list[str]:
    _only(body, ("memberIds",))
    ids = body.get("memberIds")
    if not isinstance(ids, list) or not 1 <= len(ids) <= MAX_RANKS_IDS:
        raise ValidationError(f"memberIds must be a list of 1 to {MAX_RANKS_IDS} member ids")
    unique = dict.fromkeys(member_id(item, "memberIds[]") for item in ids)
    return list(unique)


def rivals(body: dict[str, Any]) -> list[str]:
    _only(body, ("memberIds",))
    ids = body.get("memberIds")
    if not isinstance(ids, list) or len(ids) > MAX_RIVALS:
        raise ValidationError(f"memberIds must be a list of 0 to {MAX_RIVALS} member ids")
    return list(dict.fromkeys(member_id(item, "memberIds[]") for item in ids))


@frozen
class EventRequest:
    member_id: str
    value: Decimal
    event_id: str | None


def events_request(body: dict[str, Any]) -> list[EventRequest]:
    """1 to 100 events, validated whole: one bad event refuses the request."""
    _only(body, ("events",))
    events = body.get("events")
    if not isinstance(events, list) or not 1 <= len(events) <= MAX_EVENTS:
        raise ValidationError(f"events must be a list of 1 to {MAX_EVENTS} events")
    parsed = []
    for index, event in enumerate(events):
        field = f"events[{index}]"
        if not isinstance(event, dict):
            raise ValidationError(f"{field} must be an object with memberId, value and an optional eventId")
        unknown = sorted(set(event) - {"memberId", "value", "eventId"})
        if unknown:
            raise ValidationError(f"{field} has an unknown field {unknown[0]!r}")
        event_id = event.get("eventId")
        if event_id is not None and (not isinstance(event_id, str) or not 1 <= len(event_id) <= MAX_EVENT_ID):
            raise ValidationError(f"{field}.eventId must be a string of 1 to {MAX_EVENT_ID} characters")
        if "value" not in event:
            raise ValidationError(f"{field}.value is required")
        parsed.append(
            EventRequest(
                member_id=member_id(event.get("memberId"), f"{field}.memberId"),
                value=numbers.check_score(event["value"], f"{field}.value"),
                event_id=event_id,
            )
        )
    return parsed


def query_int(params: dict[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    if not re.fullmatch(r"-?\d{1,9}", raw):
        raise ValidationError(f"{name} must be an integer from {low} to {high}")
    return _integer(int(raw), name, low, high)


def page_limit(params: dict[str, str], listing: str) -> int:
    """A listing's ``?limit=``: its default when absent, else 1 to its most (``PAGE_SIZES``)."""
    default, most = PAGE_SIZES[listing]
    return query_int(params, "limit", default, 1, most)


def query_bool(params: dict[str, str], name: str) -> bool:
    raw = params.get(name)
    if raw is None:
        return False
    if raw.lower() not in ("true", "false"):
        raise ValidationError(f"{name} must be true or false")
    return raw.lower() == "true"


# A query parameter that holds a score: a JSON number (as a body's score is written), read
# exactly; the length keeps a huge exponent or mantissa from being parsed at all.
QUERY_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
MAX_QUERY_NUMBER = 100


def query_score(params: dict[str, str], name: str) -> Decimal | None:
    """A score given in the query (``min=82.3``), exactly, under the rules of a score in
    a body; None when it is not given."""
    raw = params.get(name)
    if raw is None:
        return None
    if len(raw) > MAX_QUERY_NUMBER or not QUERY_NUMBER.fullmatch(raw):
        raise ValidationError(f"{name} must be a number, written as in JSON (such as 82.3 or -5)")
    return numbers.check_score(Decimal(raw), name)


def score_band(params: dict[str, str]) -> tuple[Decimal | None, Decimal | None]:
    """The ``min`` and ``max`` of ``GET .../scores``, each optional and inclusive."""
    least, most = query_score(params, "min"), query_score(params, "max")
    if least is not None and most is not None and least > most:
        low, high = numbers.format_number(least), numbers.format_number(most)
        raise ValidationError(f"min ({low}) must not be above max ({high})")
    return least, most


def reshard_shards(body: dict[str, Any]) -> int:
    """The shard count a re-shard asks for: ``{"shards": N}``, 1..MAX_SHARDS."""
    unknown = sorted(set(body) - {"shards"})
    if unknown:
        raise ValidationError(f"unknown field {unknown[0]}: a re-shard takes only shards")
    if "shards" not in body:
        raise ValidationError(f"shards is required: an integer from 1 to {MAX_SHARDS}")
    return _integer(body["shards"], "shards", 1, MAX_SHARDS)
