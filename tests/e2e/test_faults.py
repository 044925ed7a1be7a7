"""Under faults at DynamoDB (devstack/faults.py between the local stack and DynamoDB
Local: throttling, 500s, connections dropped before and after the request took effect,
added latency, in the stream consumers' calls too), concurrent clients submit scores and
events with and without Idempotency-Keys. Each keeps a model of what it was told: every
acknowledged write is applied exactly once, every refused one changes nothing, and a
write without a definite answer may have been applied or not (with a key, the client
sends it again until it hears). Once the faults stop the stream consumers converge and
the consistency checker finds nothing."""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import pytest
import requests

from devstack import template as template_module
from devstack.faults import FaultProxy, FaultRates
from podium import numbers
from podium.config import Settings
from tests.conftest import StackLauncher
from tests.helpers import decimal_json, eventually, unique_id, verify_board
from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e

TIMEOUT = 60
CLIENTS = 8
REQUESTS_PER_CLIENT = 16
KEYED_PATIENCE = 30.0  # how long a client sends a keyed request again until it hears
FAULTS = FaultRates(throttle=0.04, error=0.03, drop_before=0.02, drop_after=0.05, latency=0.2, delay=0.05)
WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})


@pytest.fixture(scope="module")
def fault_proxy(own_dynamodb: str) -> Iterator[FaultProxy]:
    with FaultProxy(own_dynamodb, seed=12) as proxy:
        yield proxy


@pytest.fixture(scope="module")
def faulty_stack(launch_stack: StackLauncher, fault_proxy: FaultProxy) -> Iterator[LocalStack]:
    """A local stack whose every DynamoDB and DynamoDB Streams call goes through the proxy."""
    with launch_stack(name="faults", dynamodb=fault_proxy.endpoint) as local:
        yield local


@pytest.fixture(autouse=True)
def no_faults_after(fault_proxy: FaultProxy) -> Iterator[None]:
    yield
    fault_proxy.clear()


# -- what each client was told, and what that allows ------------------------------------


@dataclass
class Ledger:
    """What one member's writes came to, as the clients were answered: applied (200 or
    202), refused (429, 409: nothing changed), unknown (no definite answer). ``order``
    keeps them in the order sent, for a member that one client writes in turn."""

    operator: str
    start: Decimal = Decimal(0)
    applied: list[Decimal] = field(default_factory=list)
    unknown: list[Decimal] = field(default_factory=list)
    refused: int = 0
    order: list[tuple[str, Decimal]] = field(default_factory=list)

    def record(self, outcome: str, value: Decimal) -> None:
        if outcome == "applied":
            self.applied.append(value)
        elif outcome == "unknown":
            self.unknown.append(value)
        else:
            self.refused += 1
        self.order.append((outcome, value))

    def allows(self, final: Decimal) -> bool:
        if self.operator == "increment":
            return final - self.start - sum(self.applied, Decimal(0)) in subset_sums(self.unknown)
        if self.operator == "best":
            known = max([self.start, *self.applied])
            return final == known or (final > known and final in self.unknown)
        # set, written by one client in turn: the last value applied, or a later unknown one
        last = next((i for i in range(len(self.order) - 1, -1, -1) if self.order[i][0] == "applied"), None)
        candidates = {self.start if last is None else self.order[last][1]}
        candidates |= {v for outcome, v in self.order[(last or -1) + 1 :] if outcome == "unknown"}
        return final in candidates

    def __str__(self) -> str:
        return (
            f"{self.operator} from {self.start}: applied {self.applied}, unknown {self.unknown}, "
            f"refused {self.refused}"
        )


def subset_sums(values: list[Decimal]) -> set[Decimal]:
    sums = {Decimal(0)}
    for value in values:
        sums |= {s + value for s in sums}
    return sums


@dataclass
class Tally:
    answers: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, what: str) -> None:
        with self.lock:
            self.answers[what] = self.answers.get(what, 0) + 1


def check_throttled(response: requests.Response) -> None:
    """A 429 here is the API's Throttled (these boards set no limits), with Retry-After."""
    assert response.json()["code"] == "Throttled", response.text
    assert response.headers.get("Retry-After", "").isdigit(), (response.headers, response.text)
    assert int(response.headers["Retry-After"]) >= 1


def send(
    session: requests.Session, url: str, body: Any, key: str | None, tally: Tally
) -> tuple[str, requests.Response | None]:
    """POST ``body``. The outcome, as far as the client can know: "applied" (200 or 202),
    "refused" (429 or 409 to a first try: it changed nothing) or "unknown" (a 5xx or no
    answer). With a key, a request without a definite answer is sent again with the same
    key until it gets one, as the API tells a client to (a 429 or 409 to a later try then
    only says that this try changed nothing)."""
    headers = {"Idempotency-Key": key} if key else {}
    deadline = time.monotonic() + KEYED_PATIENCE
    tries = 0
    while True:
        tries += 1
        try:
            response: requests.Response | None = session.post(
                url, data=numbers.dumps(body), headers=headers, timeout=TIMEOUT
            )
        except requests.RequestException:
            response = None
        status = response.status_code if response is not None else 0
        tally.count(str(status or "no answer"))
        if response is None or status >= 500:
            if key is None or time.monotonic() > deadline:
                return "unknown", response
            time.sleep(0.3)
            continue
        if status in (200, 202):
            return "applied", response
        if status == 429:
            check_throttled(response)
        elif status == 409:
            assert response.json()["code"] == "Conflict", response.text
        else:
            raise AssertionError(f"{url} {body}: {status} {response.text}")
        if tries == 1:
            return "refused", response
        if time.monotonic() > deadline:
            return "unknown", response
        time.sleep(1.0)


# -- the boards ----------------------------------------------------------------------------


@dataclass
class Boards:
    url: str
    increment: str
    best: str
    set: str
    events: str
    total: str  # the increment board's rollup target

    @property
    def scored(self) -> list[str]:
        return [self.increment, self.best, self.set]


def put(url: str, body: Any) -> Any:
    response = requests.put(url, data=numbers.dumps(body), timeout=TIMEOUT)
    assert response.status_code in (200, 201), response.text
    return decimal_json(response)


def make_boards(url: str) -> Boards:
    suffix = unique_id("f")
    boards = Boards(
        url=url,
        increment=f"inc-{suffix}",
        best=f"best-{suffix}",
        set=f"set-{suffix}",
        events=f"events-{suffix}",
        total=f"total-{suffix}",
    )
    put(f"{url}/boards/{boards.total}", {"shards": 2})
    put(f"{url}/boards/{boards.increment}", {"shards": 4, "rollupTo": [boards.total]})
    put(f"{url}/boards/{boards.best}", {"operator": "best", "shards": 3})
    put(f"{url}/boards/{boards.set}", {"operator": "set", "shards": 2})
    put(f"{url}/boards/{boards.events}", {"shards": 2})
    return boards


def member_score(url: str, board: str, member: str) -> Decimal:
    response = requests.get(f"{url}/boards/{board}/members/{member}", timeout=TIMEOUT)
    assert response.status_code == 200, response.text
    score = decimal_json(response)["score"]
    assert isinstance(score, Decimal)
    return score


def board_settings(stack: LocalStack) -> Settings:
    spec = template_module.read(stack.table_prefix)
    return spec.settings()


# -- the clients ---------------------------------------------------------------------------


def value_of(rng: random.Random) -> Decimal:
    """Distinct enough that a sum tells which writes it holds: 1.01 to 99.99."""
    return Decimal(rng.randint(101, 9999)) / 100


def run_clients(
    boards: Boards, members: dict[str, list[str]], ledgers: dict[tuple[str, str], Ledger]
) -> Tally:
    tally = Tally()
    lock = threading.Lock()

    def client(number: int) -> None:
        rng = random.Random(number)
        session = requests.Session()
        own = f"own-{number}"  # this client's member of the set board, written in turn
        for _ in range(REQUESTS_PER_CLIENT):
            key = uuid.uuid4().hex if rng.random() < 0.5 else None
            roll = rng.random()
            value = value_of(rng)
            if roll < 0.2:
                event_member = rng.choice(members[boards.events])
                events = [{"memberId": event_member, "value": value}]
                if key is not None:  # eventIds make a batch safe to send again
                    events = [{**e, "eventId": f"{key}-{i}"} for i, e in enumerate(events)]
                outcome, _ = send(
                    session, f"{boards.url}/boards/{boards.events}/events", {"events": events}, key, tally
                )
                with lock:
                    ledgers[(boards.events, event_member)].record(outcome, value)
                continue
            if roll < 0.55:
                board = boards.increment
            elif roll < 0.8:
                board = boards.best
            else:
                board = boards.set
            member = own if board == boards.set else rng.choice(members[board])
            url = f"{boards.url}/boards/{board}/members/{member}/score"
            outcome, response = send(session, url, {"value": value}, key, tally)
            if outcome == "applied" and board == boards.increment:
                assert response is not None
                answer = decimal_json(response)
                assert answer["score"] - answer["previousScore"] == value, answer
            with lock:
                ledgers[(board, member)].record(outcome, value)

    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        list(pool.map(client, range(CLIENTS)))
    return tally


def assert_allowed(ledgers: dict[tuple[str, str], Ledger], scores: dict[str, dict[str, Decimal]]) -> None:
    wrong = [
        f"{board}/{member}: score {score}, {score - sum(ledgers[(board, member)].applied, Decimal(0))} "
        f"more than the applied values add up to; {ledgers[(board, member)]}"
        for board, found in scores.items()
        for member, score in found.items()
        if not ledgers[(board, member)].allows(score)
    ]
    assert not wrong, "\n".join(wrong)


def settle(boards: Boards, members: dict[str, list[str]], ledgers: dict[tuple[str, str], Ledger]) -> None:
    """Faults off: every member's score is one its ledger allows, the stream has folded
    the events, carried the changes to the rollup target, counted the members and built
    the head, and the checker finds nothing."""
    url = boards.url
    finals: dict[str, dict[str, Decimal]] = {}
    for board in boards.scored:
        finals[board] = {m: member_score(url, board, m) for m in members[board]}
    assert_allowed(ledgers, finals)

    # The events at once, folded or not: a fresh read is the fold plus the events logged since
    def fresh(member: str) -> Any:
        path = f"{url}/boards/{boards.events}/members/{member}?fresh=true"
        return decimal_json(requests.get(path, timeout=TIMEOUT))

    assert_allowed(ledgers, {boards.events: {m: fresh(m)["score"] for m in members[boards.events]}})

    def events_folded() -> None:
        for member in members[boards.events]:
            assert fresh(member)["pendingEvents"] == 0, member

    eventually(events_folded, timeout=300, interval=0.5)
    finals[boards.events] = {m: member_score(url, boards.events, m) for m in members[boards.events]}
    assert_allowed(ledgers, finals)

    def rolled_up() -> None:
        assert {m: member_score(url, boards.total, m) for m in members[boards.increment]} == finals[
            boards.increment
        ]

    eventually(rolled_up, timeout=300, interval=0.5)
    finals[boards.total] = finals[boards.increment]
    members[boards.total] = members[boards.increment]

    for board in [*boards.scored, boards.events, boards.total]:
        expected = sorted(finals[board].items(), key=lambda item: (-item[1], item[0]))

        def counted_and_headed(board: str = board, expected: list[tuple[str, Decimal]] = expected) -> None:
            info = decimal_json(requests.get(f"{url}/boards/{board}", timeout=TIMEOUT))
            assert info["memberCount"] == len(expected), (board, info)
            for query in ("limit=100", "limit=100&consistent=true"):
                top = decimal_json(requests.get(f"{url}/boards/{board}/top?{query}", timeout=TIMEOUT))
                assert [(e["memberId"], e["score"]) for e in top["entries"]] == expected, (board, query, top)
                assert top["total"] == len(expected)

        eventually(counted_and_headed, timeout=180, interval=0.5)


def checker_finds_nothing(stack: LocalStack, dynamodb_endpoint: str, *board_ids: str) -> None:
    """The consistency checker (``podium.consistency``) on each board, reading DynamoDB
    Local directly, not through the proxy: the index, head, count tree and counts agree with
    the items, once the stream has carried the last writes (the checker wants a quiet board)."""

    def consistent() -> None:
        for board_id in board_ids:
            report = verify_board(board_settings(stack), board_id, endpoint=dynamodb_endpoint)
            assert report.ok, (board_id, [difference.detail for difference in report.differences])

    eventually(consistent, timeout=240, interval=1.0)


# -- the tests ---------------------------------------------------------------------------------


def test_under_faults_every_acknowledged_write_is_applied_once_and_every_refused_one_changes_nothing(
    faulty_stack: LocalStack, fault_proxy: FaultProxy, own_dynamodb: str
) -> None:
    # Given boards of each operator (and an event board, and a rollup target), with members
    url = faulty_stack.url
    boards = make_boards(url)
    members = {
        boards.increment: [f"p{i}" for i in range(5)],
        boards.best: [f"p{i}" for i in range(4)],
        boards.set: [f"own-{i}" for i in range(CLIENTS)],
        boards.events: [f"img-{i}" for i in range(3)],
    }
    operators = {boards.increment: "increment", boards.best: "best", boards.set: "set"}
    ledgers = {}
    for board, ids in members.items():
        for member in ids:
            put(f"{url}/boards/{board}/members/{member}", {"data": {"n": member}})
            ledgers[(board, member)] = Ledger(operators.get(board, "increment"))

    # When 8 clients write at once while DynamoDB throttles, fails, drops and lags
    fault_proxy.set(FAULTS)
    tally = run_clients(boards, members, ledgers)
    # (the faults stay on until the stream's reads have met one too: they are drawn at
    # random, and the stream may have polled little while the clients ran: a consumer busy
    # with a batch whose writes meet faults does not poll, and on a loaded machine that has
    # lasted over 30 s)
    give_up = time.monotonic() + 120
    while not fault_proxy.injected(operation="GetRecords") and time.monotonic() < give_up:
        time.sleep(0.2)
    fault_proxy.clear()

    # Then the faults happened, of every kind, the stream's reads too, and most writes got through
    for kind in ("throttle", "error", "drop_before", "drop_after", "latency"):
        assert fault_proxy.injected(kind) > 0, fault_proxy.report()
    assert fault_proxy.injected(operation="GetRecords") > 0, fault_proxy.report()
    applied = sum(len(ledger.applied) for ledger in ledgers.values())
    assert applied > CLIENTS * REQUESTS_PER_CLIENT // 2, tally.answers
    # And every member's score is one its answers allow, and the stream consumers converge
    try:
        settle(boards, members, ledgers)
    except AssertionError as error:  # what the stack's consumers went through, to see why
        raise AssertionError(f"{error}\nthe stack logged:\n{faulty_stack.errors_logged(40)}") from error
    checker_finds_nothing(faulty_stack, own_dynamodb, *boards.scored, boards.events, boards.total)


def test_persistent_throttling_answers_429_with_retry_after_and_changes_nothing(
    faulty_stack: LocalStack, fault_proxy: FaultProxy, own_dynamodb: str
) -> None:
    # Given a member with a score on each operator's board, and on an event board
    url = faulty_stack.url
    boards = make_boards(url)
    before = {boards.increment: Decimal(10), boards.best: Decimal(20), boards.set: Decimal(30)}
    for board, score in [*before.items(), (boards.events, Decimal(0))]:
        put(f"{url}/boards/{board}/members/m", {"score": score})

    # When every write to DynamoDB is throttled for longer than the retries last, and
    # submissions (with and without a key) and an event come in
    fault_proxy.set(FaultRates(throttle=1.0, operations=WRITES))
    calls: list[tuple[str, str | None]] = [
        (b, key) for b in boards.scored for key in (None, unique_id("key"))
    ]
    calls.append((boards.events, None))

    def call(target: tuple[str, str | None]) -> requests.Response:
        board, key = target
        headers = {"Idempotency-Key": key} if key else {}
        body: dict[str, Any] = {"value": 50}
        path = f"/boards/{board}/members/m/score"
        if board == boards.events:
            path, body = f"/boards/{board}/events", {"events": [{"memberId": "m", "value": 5}]}
        return requests.post(f"{url}{path}", data=numbers.dumps(body), headers=headers, timeout=TIMEOUT)

    with ThreadPoolExecutor(max_workers=len(calls)) as pool:
        responses = list(pool.map(call, calls))
    fault_proxy.clear()

    # Then each is 429 Throttled, with Retry-After
    for target, response in zip(calls, responses, strict=True):
        assert response.status_code == 429, (target, response.status_code, response.text)
        check_throttled(response)
    # And nothing changed
    for board, score in before.items():
        assert member_score(url, board, "m") == score
    fresh = decimal_json(requests.get(f"{url}/boards/{boards.events}/members/m?fresh=true", timeout=TIMEOUT))
    assert (fresh["score"], fresh["pendingEvents"]) == (0, 0)
    # And a key refused that way applies its submission once when sent again
    board, key = calls[1]
    again = call((board, key))
    assert again.status_code == 200, again.text
    assert decimal_json(again) == {
        "memberId": "m",
        "score": before[board] + 50,
        "previousScore": before[board],
    }
    assert member_score(url, board, "m") == before[board] + 50
    checker_finds_nothing(faulty_stack, own_dynamodb, *boards.scored, boards.events)
