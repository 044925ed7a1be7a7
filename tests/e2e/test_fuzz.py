"""Fuzzing: requests that schemathesis generates from docs/openapi.yaml, sent with an admin's
token to a local stack that checks tokens (``auth_stack``). Every answer must be documented:
no 5xx, a status that the operation lists, a body that matches that status's schema, and a
request broken on purpose refused with a 4xx. For an operation that needs a token, a request
that succeeded is sent again without one and with a bad one, which must be refused.

The generated requests stay on boards of their own. A valid boardId is made, for three
values in four, one of a few boards seeded here with members (so that requests reach real
boards and members, and not only 404s), else the same id under ``fuzz-``; an invalid one is
sent as generated (it names no board). Valid memberIds are likewise made seeded members
three times in four, in the path and in bodies.

``make test`` sends a few hundred requests: the document's examples and ``FUZZ_EXAMPLES``
(default 20) generated requests per operation. ``make fuzz`` raises that and adds the
coverage phase (boundary and type-confused values of every parameter, deterministic), and
prints the count of requests by status, phase and operation. The seed is fixed
(``FUZZ_SEED``), so that a run repeats. ``FUZZ_ROLE=player`` sends them with a player's
token instead (the seeded member alice's), which tries the access rules.
"""

from __future__ import annotations

import os
import re
import zlib
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import schemathesis
from schemathesis import Case
from schemathesis.generation.hypothesis.builder import ApiOperationMark

from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
OPENAPI = ROOT / "docs" / "openapi.yaml"
TIMEOUT = 30
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "20"))
COVERAGE = os.environ.get("FUZZ_COVERAGE") == "1"
SEED = int(os.environ.get("FUZZ_SEED", "12"))
ROLE = os.environ.get("FUZZ_ROLE", "admin")
# At the module's end, fewer requests than this is a failure (``make fuzz`` sets it).
MIN_REQUESTS = int(os.environ.get("FUZZ_MIN_REQUESTS", "0"))

PREFIX = "fuzz-"
BOARD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
MEMBER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@~-]{0,199}")
# Boards of every kind of setting, each seeded with MEMBERS (one of them hidden).
SEEDED_BOARDS: dict[str, dict[str, Any]] = {
    f"{PREFIX}desc-increment": {"title": "desc, increment, shared"},
    f"{PREFIX}asc-best": {"order": "asc", "operator": "best", "tieBreak": "earliest", "shards": 3},
    f"{PREFIX}set-weekly": {"operator": "set", "reset": "weekly", "retainPeriods": 2, "shards": 1},
    f"{PREFIX}open": {
        "clientWrites": True,
        "publicRead": True,
        "limits": {"minValue": -100, "maxValue": 1000, "maxSubmissionsPerMinute": 30},
    },
}
MEMBERS: dict[str, int | float] = {"alice": 40, "bob": 7.5, "carol": -3, "dave": 40, "erin": 0}
HIDDEN = "erin"

# Loaded with the module: schemathesis makes one test per operation at collection, and each
# call is given the stack's URL and token. (Its schema loaded from a fixture, which would
# take them from there, rewrites pytest's node ids, which pytest 9.2 no longer allows.)
schema = schemathesis.openapi.from_path(
    OPENAPI,
    config=schemathesis.Config.from_dict(
        {
            "seed": SEED,
            "request-timeout": TIMEOUT,
            "suppress-health-check": ["too_slow", "filter_too_much", "data_too_large", "large_base_example"],
            "generation": {"max-examples": EXAMPLES, "database": "none", "allow-extra-parameters": False},
            "phases": {"coverage": {"enabled": COVERAGE, "unexpected-methods": []}},
            "checks": {
                # The schemas cannot say everything the contract refuses with 400 (a cursor
                # the service did not issue, a future period, min above max, a rollup target
                # that does not exist), so a valid-looking request may well be refused.
                "positive_data_acceptance": {"enabled": False},
                # A method no route has is answered by API Gateway, not by the service.
                "unsupported_method": {"enabled": False},
            },
        }
    ),
)


def bearer(url: str, role: str, member: str | None = None) -> dict[str, str]:
    """The Authorization header of a token from the stack's own issuer."""
    body = {"role": role, **({"memberId": member} if member else {})}
    response = requests.post(f"{url}/_local/token", json=body, timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['token']}"}


class Api:
    """The seeded boards' admin (a session with an admin's token), and the fuzzer's token:
    an admin's, or with ``FUZZ_ROLE=player`` the seeded member alice's."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.session = requests.Session()
        self.session.headers.update(bearer(url, "admin"))
        self.headers = bearer(url, "player", "alice") if ROLE == "player" else bearer(url, "admin")

    def expect(self, status: int, method: str, path: str, body: Any = None) -> None:
        response = self.session.request(method, f"{self.url}{path}", json=body, timeout=TIMEOUT)
        assert response.status_code == status, f"{method} {path}: {response.status_code} {response.text}"

    def seed_member(self, board: str, member: str) -> None:
        body = {"score": MEMBERS[member], "data": {"name": member}, "hidden": member == HIDDEN}
        response = self.session.put(f"{self.url}/boards/{board}/members/{member}", json=body, timeout=TIMEOUT)
        assert response.status_code in (200, 201), response.text


class Tally:
    """What the fuzzer sent: requests counted by status, by phase and by operation."""

    def __init__(self) -> None:
        self.statuses: Counter[int] = Counter()
        self.phases: Counter[str] = Counter()
        self.operations: Counter[str] = Counter()

    @property
    def total(self) -> int:
        return sum(self.statuses.values())

    def record(self, case: Case[Any], status: int) -> None:
        self.statuses[status] += 1
        self.phases[case.meta.phase.name.value if case.meta else "explicit"] += 1
        self.operations[case.operation.label] += 1

    def report(self) -> str:
        def counts(counter: Counter[Any]) -> str:
            return ", ".join(f"{key}: {n}" for key, n in sorted(counter.items()))

        return "\n".join(
            [
                f"fuzz: {self.total} generated requests (seed {SEED}, {EXAMPLES} examples per "
                f"operation, coverage phase {'on' if COVERAGE else 'off'}, {ROLE}'s token)",
                f"  by status: {counts(self.statuses)}",
                f"  by phase: {counts(self.phases)}",
                *(f"  {label}: {n}" for label, n in sorted(self.operations.items())),
            ]
        )


@pytest.fixture(scope="module")
def fuzz_api(auth_stack: LocalStack) -> Api:
    """The seeded boards, with members, rivals and an event logged."""
    api = Api(auth_stack.url)
    for board, settings in SEEDED_BOARDS.items():
        api.expect(201, "PUT", f"/boards/{board}", settings)
        for member in MEMBERS:
            api.seed_member(board, member)
        api.expect(200, "PUT", f"/boards/{board}/members/alice/rivals", {"memberIds": ["bob", "dave"]})
    event = {"memberId": "bob", "value": 1, "eventId": "seeded"}
    api.expect(202, "POST", f"/boards/{PREFIX}open/events", {"events": [event]})
    return api


@pytest.fixture(scope="module")
def tally(request: pytest.FixtureRequest) -> Iterator[Tally]:
    counted = Tally()
    yield counted
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled():
        print("\n" + counted.report())
    assert counted.total >= MIN_REQUESTS, (
        f"only {counted.total} requests; FUZZ_MIN_REQUESTS is {MIN_REQUESTS}"
    )


def _pick(value: str, choices: list[str]) -> str | None:
    """One of ``choices`` for three generated values in four, chosen by a hash of the value
    (so that a run repeats), else None."""
    slot = zlib.crc32(value.encode("utf-8", "surrogatepass")) % (4 * len(choices))
    return choices[slot % len(choices)] if slot < 3 * len(choices) else None


def _board(value: Any) -> Any:
    if not isinstance(value, str) or not BOARD_ID.fullmatch(value):
        return value
    return _pick(value, list(SEEDED_BOARDS)) or f"{PREFIX}{value}"[:128]


def _member(value: Any) -> Any:
    if not isinstance(value, str) or not MEMBER_ID.fullmatch(value):
        return value
    return _pick(value, list(MEMBERS)) or value


def confine(case: Case[Any]) -> None:
    """Keep ``case`` on the fuzzer's boards, and send it to seeded members some of the time."""
    path = case.path_parameters
    if path and "boardId" in path:
        path["boardId"] = _board(path["boardId"])
    if path and "memberId" in path:
        path["memberId"] = _member(path["memberId"])
    body: Any = case.body
    if not isinstance(body, dict):
        return
    if isinstance(body.get("rollupTo"), list):
        body["rollupTo"] = [_board(board) for board in body["rollupTo"]]
    if isinstance(body.get("memberIds"), list):
        body["memberIds"] = [_member(member) for member in body["memberIds"]]
    events = body.get("events")
    for event in events if isinstance(events, list) else []:
        if isinstance(event, dict) and "memberId" in event:
            event["memberId"] = _member(event["memberId"])


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Name each operation's test after it. Schemathesis names its items so, but pytest 9.2
    builds a node id from the function's name and parameters alone: every operation's test
    had the same id then, and pytest-xdist (``make test``) ran just one of them."""
    if "operation_label" in metafunc.fixturenames:
        operation = ApiOperationMark.get(metafunc.function)
        assert operation is not None, "schemathesis no longer marks its tests with their operation"
        metafunc.parametrize("operation_label", [operation.label], ids=[operation.label])


@schema.parametrize()
def test_every_generated_request_gets_a_documented_answer(
    case: Case[Any], operation_label: str, fuzz_api: Api, tally: Tally
) -> None:
    # Given a generated request, kept on the fuzzer's boards
    assert case.operation.label == operation_label
    confine(case)

    # When it is sent with the fuzzer's token (an admin's)
    response = case.call(base_url=fuzz_api.url, headers=fuzz_api.headers, timeout=TIMEOUT)
    tally.record(case, response.status_code)

    # Then the answer is documented: no 5xx, a status the operation lists, a body of its schema
    case.validate_response(
        response,
        headers=fuzz_api.headers,
        transport_kwargs={"base_url": fuzz_api.url, "headers": fuzz_api.headers, "timeout": TIMEOUT},
    )

    # (a seeded member that the request deleted comes back, for the requests after this one)
    path = case.path_parameters or {}
    if case.method == "DELETE" and path.get("boardId") in SEEDED_BOARDS and path.get("memberId") in MEMBERS:
        fuzz_api.seed_member(path["boardId"], path["memberId"])
