"""The clients of ``make load`` (locust, headless): each one calls the API as fast as it is
answered, with a mix of reads and writes on the boards that ``bench.loadrun`` made.

    locust -f bench/locustfile.py --headless -u 64 -r 64 -t 60s --host URL  (PODIUM_LOAD_PLAN=plan.json)

``python -m bench.loadrun`` writes the plan and starts this; run by hand it needs the same
plan. Every write is recorded (a ``sent`` line before it goes out, its status and answer
when it comes back) in the plan's ``records`` file, from which bench.loadmodel builds the
model of every score; every request's route, status and time go to the plan's
``requests`` file when the run stops.
"""

from __future__ import annotations

import itertools
import json
import os
import random
import time
import uuid
from collections import deque
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

from locust import FastHttpUser, constant, events, task
from locust.env import Environment

PLAN: dict[str, Any] = json.loads(Path(os.environ["PODIUM_LOAD_PLAN"]).read_text())
BOARDS: dict[str, str] = PLAN["boards"]  # role (increment, best, set, weekly) -> boardId
MEMBERS: list[str] = PLAN["members"]  # every board has the same members
HOT = PLAN.get("hot", 4)  # the first HOT members get HOT_SHARE of the writes: contention
HOT_SHARE = 0.3
# Statuses a request may get besides 2xx without anything being wrong: 409 for a keyed
# submission whose first attempt is still being applied, 429 when retries are spent.
EXPECTED = {409, 429}
KEYED_ATTEMPTS = 4  # a keyed submission that gets no answer, a 5xx or 409 is retried with its key


class Records:
    """Every write, as JSON lines: ``{"id", "op", ...}`` before it is sent, and
    ``{"id", "status", "answer"}`` once it is answered."""

    def __init__(self, path: Path) -> None:
        self.out = path.open("a", encoding="utf-8")
        self.numbers = itertools.count(1)

    def sent(self, **request: Any) -> int:
        number = next(self.numbers)
        self._line({"id": number, **request})
        return number

    def answered(self, number: int, status: int, answer: str | None) -> None:
        self._line({"id": number, "status": status, "answer": answer})

    def _line(self, record: dict[str, Any]) -> None:
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()


RECORDS = Records(Path(PLAN["records"]))
# Route -> [status, milliseconds] of every request; written to PLAN["requests"] at the end.
SAMPLES: dict[str, list[tuple[int, float]]] = {}
TIMES: dict[str, float] = {}
# Keyed submissions already sent, for replays (from any client: a replay may overlap the
# first attempt); and events sent with an id, to send again.
SENT_KEYS: deque[tuple[str, str, str, str]] = deque(maxlen=256)
SENT_EVENTS: dict[str, deque[dict[str, Any]]] = {board: deque(maxlen=256) for board in BOARDS.values()}
EVENT_IDS = itertools.count(1)
SET_VALUES = itertools.count(1)  # a set board's values are all distinct: their integer part
RUN = uuid.uuid4().hex[:8]


def _sample(name: str, response_time: float, response: Any, **_: Any) -> None:
    status = int(getattr(response, "status_code", 0) or 0)
    SAMPLES.setdefault(name, []).append((status, round(response_time, 2)))


def _started(environment: Environment, **_: Any) -> None:
    TIMES["started"] = time.time()


def _stopped(environment: Environment, **_: Any) -> None:
    TIMES["stopped"] = time.time()
    Path(PLAN["requests"]).write_text(json.dumps({**TIMES, "samples": SAMPLES}))


# locust's EventHook.add_listener has no type hints.
events.request.add_listener(_sample)  # type: ignore[no-untyped-call]
events.test_start.add_listener(_started)  # type: ignore[no-untyped-call]
events.test_stop.add_listener(_stopped)  # type: ignore[no-untyped-call]


def _value(role: str) -> Decimal:
    if role == "set":
        return Decimal(next(SET_VALUES)) + Decimal(random.randint(1, 99)) / 100
    if role == "best":
        return Decimal(random.randint(100, 1_000_000)) / 100
    return Decimal(random.randint(1, 500)) / 100  # increments: 0.01 to 5, never 0 nor negative


class Client(FastHttpUser):
    """A game server: no think time, one request after another."""

    wait_time = constant(0)
    network_timeout = 120.0
    connection_timeout = 120.0

    def on_start(self) -> None:
        self.headers = {"Content-Type": "application/json"}
        if PLAN.get("token"):
            self.headers["Authorization"] = f"Bearer {PLAN['token']}"
        # Every kind of write once first, so that even a short run has each of them.
        self.submit_with_key()
        self.replay()
        self.submit_without_key()
        self.events_with_ids()
        self.events_without_ids()

    # ---- helpers ----

    def member(self, write: bool = False) -> str:
        if write and random.random() < HOT_SHARE:
            return random.choice(MEMBERS[:HOT])
        return random.choice(MEMBERS)

    def call(
        self,
        method: str,
        path: str,
        name: str,
        body: str | None = None,
        headers: dict[str, str] | None = None,
        ok: Callable[[int], bool] = lambda status: 200 <= status < 300,
    ) -> tuple[int, str | None]:
        """Send one request; its status (0: no answer) and body."""
        with self.client.request(
            method,
            path,
            name=name,
            data=body,
            headers={**self.headers, **(headers or {})},
            catch_response=True,
        ) as response:
            status = int(response.status_code or 0)
            text = response.text if status else None
            if ok(status):
                response.success()
            else:
                response.failure(f"{status} {text or response.error}")
            return status, text

    # ---- reads ----

    @task(6)
    def top(self) -> None:
        board = random.choice(list(BOARDS.values()))
        self.call("GET", f"/boards/{board}/top?limit=10", "GET top")

    @task(3)
    def top_consistent(self) -> None:
        board = random.choice(list(BOARDS.values()))
        self.call("GET", f"/boards/{board}/top?limit=50&consistent=true", "GET top consistent")

    @task(6)
    def rank(self) -> None:
        board = random.choice(list(BOARDS.values()))
        self.call("GET", f"/boards/{board}/members/{self.member()}/rank", "GET rank")

    @task(4)
    def around(self) -> None:
        board = random.choice(list(BOARDS.values()))
        self.call("GET", f"/boards/{board}/members/{self.member()}/around?radius=5", "GET around")

    @task(3)
    def ranks(self) -> None:
        board = random.choice(list(BOARDS.values()))
        ids = random.sample(MEMBERS, min(len(MEMBERS), random.randint(5, 30)))
        self.call("POST", f"/boards/{board}/ranks", "POST ranks", json.dumps({"memberIds": ids}))

    @task(3)
    def member_fresh(self) -> None:
        board = BOARDS["increment"]
        self.call("GET", f"/boards/{board}/members/{self.member()}?fresh=true", "GET member fresh")

    # ---- score submissions ----

    def submit(self, board: str, member: str, body: str, key: str | None, name: str) -> int:
        value = json.loads(body, parse_float=str, parse_int=str)["value"]
        number = RECORDS.sent(op="submit", board=board, member=member, value=value, key=key)
        headers = {"Idempotency-Key": key} if key else None
        status, text = self.call(
            "POST",
            f"/boards/{board}/members/{member}/score",
            name,
            body,
            headers,
            ok=lambda status: 200 <= status < 300 or (key is not None and status in EXPECTED),
        )
        RECORDS.answered(number, status, text)
        return status

    @task(8)
    def submit_with_key(self) -> None:
        role = random.choice(list(BOARDS))
        board, member = BOARDS[role], self.member(write=True)
        body = f'{{"value": {_value(role)}}}'
        key = f"load-{RUN}-{uuid.uuid4().hex}"
        SENT_KEYS.append((board, member, key, body))
        for attempt in range(KEYED_ATTEMPTS):
            status = self.submit(board, member, body, key, "POST score (key)")
            if 200 <= status < 300 or (400 <= status < 500 and status != 409):
                return
            time.sleep(0.05 * (attempt + 1))  # the first attempt in flight, or no answer: again

    @task(3)
    def replay(self) -> None:
        if SENT_KEYS:
            board, member, key, body = random.choice(SENT_KEYS)
            self.submit(board, member, body, key, "POST score (replay)")

    @task(6)
    def submit_without_key(self) -> None:
        role = random.choice(list(BOARDS))
        body = f'{{"value": {_value(role)}}}'
        self.submit(BOARDS[role], self.member(write=True), body, None, "POST score")

    # ---- events ----

    def post_events(self, board: str, batch: list[dict[str, Any]], name: str) -> None:
        body = _numbers(batch)
        number = RECORDS.sent(op="events", board=board, body=body)
        status, text = self.call("POST", f"/boards/{board}/events", name, body)
        RECORDS.answered(number, status, text)

    def event_board(self) -> str:
        return BOARDS["weekly"] if random.random() < 0.25 else BOARDS["increment"]

    @task(4)
    def events_with_ids(self) -> None:
        board = self.event_board()
        recent = SENT_EVENTS[board]
        batch: list[dict[str, Any]] = []
        for _ in range(random.randint(1, 10)):
            if recent and random.random() < 0.2:
                batch.append(random.choice(recent))  # sent before: counted once
            elif batch and random.random() < 0.05:
                batch.append(batch[-1])  # twice in one batch: counted once
            else:
                event = {
                    "memberId": self.member(write=True),
                    "value": _value("increment"),
                    "eventId": f"ev-{RUN}-{next(EVENT_IDS)}",
                }
                batch.append(event)
        recent.extend(batch)
        self.post_events(board, batch, "POST events (ids)")

    @task(3)
    def events_without_ids(self) -> None:
        batch = [
            {"memberId": self.member(write=True), "value": _value("increment")}
            for _ in range(random.randint(1, 10))
        ]
        self.post_events(self.event_board(), batch, "POST events")


def _numbers(batch: list[dict[str, Any]]) -> str:
    """The events as JSON, their Decimal values written as JSON numbers."""
    parts = []
    for event in batch:
        fields = [f'"memberId": {json.dumps(event["memberId"])}', f'"value": {event["value"]}']
        if "eventId" in event:
            fields.append(f'"eventId": {json.dumps(event["eventId"])}')
        parts.append("{" + ", ".join(fields) + "}")
    return '{"events": [' + ", ".join(parts) + "]}"
