"""``make load``: a bounded load on the local stack, then proof that nothing was lost.

    python -m bench.loadrun [--duration 60s] [--users 64] [--members 100] [--deliver-twice]

It starts ``make run``'s stack in this process (DynamoDB Local, the API on a free port with
tokens checked, the stream consumers), takes an admin token from the stack's issuer, makes
four boards (``increment`` with events, ``best`` ordered ``asc``, ``set``, and a weekly
``increment`` board with events) with the same members, and runs ``--users`` locust clients
(bench/locustfile.py, headless) for ``--duration``: reads (top, with and without
``consistent``, rank, around, ranks, the member with ``fresh=true``), score submissions with
an ``Idempotency-Key`` and replays of it, submissions without one, and event batches with
and without ``eventId``s (some sent again). Then it waits for the change stream to drain,
checks every member's score against the model built from the acknowledged writes
(bench/loadmodel.py), checks each board's listing against those scores, runs the
consistency checker on every board, and writes the report to bench-data/load/report.md.
It exits 1 if a write was lost or doubled, a request got a 5xx, no answer or a 4xx it
should not have, a listing disagrees, or the checker found a difference.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, TypeVar

import requests

from bench.loadmodel import BoardSpec, Model, ModelCheck, decimal_json
from bench.loadreport import LoadReport, markdown, summary

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench-data" / "load"  # git-ignored
LOCUSTFILE = Path(__file__).resolve().parent / "locustfile.py"
T = TypeVar("T")
R = TypeVar("R")
TIMEOUT = 120  # seconds for one request of the harness's own (setup, settling, checks)

# role -> the board's creation body; every board gets the same members.
BOARD_SETTINGS: dict[str, dict[str, Any]] = {
    "increment": {"operator": "increment", "shards": 4, "title": "load: submissions and events"},
    "best": {
        "operator": "best",
        "order": "asc",
        "tieBreak": "earliest",
        "shards": 2,
        "title": "load: lap times",
    },
    "set": {"operator": "set", "shards": 3, "title": "load: set"},
    "weekly": {"operator": "increment", "reset": "weekly", "shards": 2, "title": "load: weekly, with events"},
}
INITIAL = {"increment": 0, "best": 100_000, "set": 0, "weekly": 0}  # every member's score at the start


@dataclass(frozen=True)
class Target:
    """A running local stack: its API, its tables' prefix and DynamoDB (for the checker)."""

    url: str
    table_prefix: str
    dynamodb: str


@dataclass
class LoadPlan:
    users: int = 64
    duration: str = "60s"
    members: int = 100
    hot: int = 4
    settle_timeout: float = 600.0
    out: Path = OUT
    command: str = "make load"
    notes: list[str] = field(default_factory=list)


def say(text: str) -> None:
    """Progress on the console, past the stack's redirected output."""
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.__stdout__, flush=True)


class Api:
    """The harness's own calls (setup, settling, checks), with the admin token; ``each``
    makes many at once."""

    THREADS = 8

    def __init__(self, url: str, token: str | None) -> None:
        self.url = url
        self.token = token
        self._local = threading.local()

    @property
    def session(self) -> requests.Session:
        session: requests.Session | None = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
            if self.token:
                session.headers["Authorization"] = f"Bearer {self.token}"
        return session

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        expect: tuple[int, ...] = (200,),
        params: dict[str, Any] | None = None,
    ) -> Any:
        response = self.session.request(
            method, f"{self.url}{path}", json=body, params=params, timeout=TIMEOUT
        )
        if response.status_code not in expect:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text}")
        return decimal_json(response.text) if response.text else None

    def each(self, work: Callable[[T], R], jobs: list[T]) -> list[R]:
        with ThreadPoolExecutor(max_workers=self.THREADS) as pool:
            return list(pool.map(work, jobs))


def admin_token(url: str, seconds: int) -> str:
    response = requests.post(
        f"{url}/_local/token", json={"role": "admin", "expiresIn": seconds}, timeout=TIMEOUT
    )
    response.raise_for_status()
    return str(response.json()["token"])


def create_boards(api: Api, run: str, members: list[str]) -> dict[str, str]:
    """The load's boards, each with every member at its initial score; role -> boardId."""
    boards = {role: f"load-{run}-{role}" for role in BOARD_SETTINGS}
    for role, board in boards.items():
        api.call("PUT", f"/boards/{board}", BOARD_SETTINGS[role], expect=(201,))

    def add(job: tuple[str, str]) -> None:
        role, member = job
        body = {"score": INITIAL[role], "data": {"load": run}}
        api.call("PUT", f"/boards/{boards[role]}/members/{member}", body, (201,))

    api.each(add, [(role, member) for role in boards for member in members])
    return boards


def run_locust(target: Target, plan: LoadPlan, plan_file: Path) -> subprocess.CompletedProcess[bytes]:
    command = [
        sys.executable,
        "-m",
        "locust",
        "-f",
        str(LOCUSTFILE),
        "--headless",
        "--users",
        str(plan.users),
        "--spawn-rate",
        str(plan.users),
        "--run-time",
        plan.duration,
        "--stop-timeout",
        "60",  # at the end every client finishes the request it is in
        "--host",
        target.url,
        "--only-summary",
        "--exit-code-on-error",
        "0",
    ]
    env = {**os.environ, "PODIUM_LOAD_PLAN": str(plan_file)}
    with (plan.out / "locust.log").open("wb") as log:
        return subprocess.run(  # noqa: S603 - this interpreter, a fixed argument list
            command, env=env, stdout=log, stderr=subprocess.STDOUT, check=False
        )


def periods_of(api: Api, board: str) -> str | None:
    """The current period of a time-windowed board; None for a board that never resets."""
    period: str | None = api.call("GET", f"/boards/{board}").get("period")
    return period


def periods_written(periods: dict[str, list[str]], board: str) -> list[str | None]:
    """The periods the load wrote in on ``board``: [None] for a board that never resets."""
    return [*periods.get(board, [])] or [None]


def wait_for_quiet(api: Api, boards: dict[str, str], members: list[str], timeout: float) -> float:
    """Wait until the stream has caught up: every board counts every member, each board's
    head shows what its index does, and every event is folded (``fresh=true`` shows none
    pending). The seconds it took.

    A fresh read is not cheap (a query per bucket of the member's log), so members are read
    a few at a time and the round stops at the first with events pending: the reads do not
    slow down the folds they wait for. A member once folded stays so (the load has stopped)."""
    started = last_said = time.monotonic()
    unfolded = [
        (board, member)
        for role, board in boards.items()
        if BOARD_SETTINGS[role]["operator"] == "increment"
        for member in members
    ]

    def pending(job: tuple[str, str]) -> bool:
        board, member = job
        fresh = api.call("GET", f"/boards/{board}/members/{member}", params={"fresh": "true"})
        return bool(fresh["pendingEvents"])

    def board_waits(role: str) -> list[str]:
        board, waits = boards[role], []
        if api.call("GET", f"/boards/{board}")["memberCount"] != len(members):
            waits.append(f"{board}: memberCount")
        head = api.call("GET", f"/boards/{board}/top", params={"limit": 100})
        index = api.call("GET", f"/boards/{board}/top", params={"limit": 100, "consistent": "true"})
        # A new week's ranking counts only the members with a score in it.
        counted = index["total"] == len(members) or "reset" in BOARD_SETTINGS[role]
        if head["entries"] != index["entries"] or head["total"] != index["total"] or not counted:
            waits.append(f"{board}: head")
        return waits

    while True:
        waiting = [wait for waits in api.each(board_waits, list(boards)) for wait in waits]
        while unfolded and not waiting:
            chunk, rest = unfolded[: Api.THREADS], unfolded[Api.THREADS :]
            still = [job for job, waits in zip(chunk, api.each(pending, chunk), strict=True) if waits]
            unfolded = still + rest
            waiting = [f"{board}/{member}: events not folded" for board, member in still]
        if not waiting:
            return time.monotonic() - started
        now = time.monotonic()
        if now - started > timeout:
            raise TimeoutError(f"the stream did not settle within {timeout:.0f} s: {waiting[:5]}")
        if now - last_said > 30:
            say(f"  still waiting: {', '.join(waiting[:3])}{' ...' if len(waiting) > 3 else ''}")
            last_said = now
        time.sleep(1.0)


Scores = dict[str, Decimal | None]  # member -> score


def read_scores(
    api: Api, boards: dict[str, str], members: list[str], periods: dict[str, list[str]]
) -> dict[tuple[str, str | None], Scores]:
    """Every member's score on every board, in each period the load wrote in on a
    time-windowed board: (boardId, period) -> member -> score."""
    jobs = [
        (board, period, member)
        for board in boards.values()
        for period in periods_written(periods, board)
        for member in members
    ]

    def score(job: tuple[str, str | None, str]) -> Decimal | None:
        board, period, member = job
        params = {"period": period} if period else None
        found: Decimal | None = api.call("GET", f"/boards/{board}/members/{member}", params=params)["score"]
        return found

    scores: dict[tuple[str, str | None], Scores] = {}
    for (board, period, member), found in zip(jobs, api.each(score, jobs), strict=True):
        scores.setdefault((board, period), {})[member] = found
    return scores


def model_scores(scores: dict[tuple[str, str | None], Scores]) -> dict[tuple[str, str], Decimal | None]:
    """(boardId, member) -> score; on a time-windowed board, the sum over the periods the load
    wrote in (each write goes to the period current when it is made)."""
    total: dict[tuple[str, str], Decimal | None] = {}
    for (board, _), by_member in scores.items():
        for member, score in by_member.items():
            before = total.get((board, member))
            total[(board, member)] = score if before is None else before + (score or 0)
    return total


def listing_problems(api: Api, board: str, order: str, period: str | None, scores: Scores) -> list[str]:
    """The board's whole listing read from the index (``consistent=true``) against the
    members' own scores: every member once, with its score, better first, ``total`` right."""
    entries: list[dict[str, Any]] = []
    params: dict[str, Any] = {"limit": 1000, "consistent": "true", **({"period": period} if period else {})}
    while True:
        page = api.call("GET", f"/boards/{board}/top", params=params)
        entries += page["entries"]
        if page["nextCursor"] is None:
            break
        params["cursor"] = page["nextCursor"]
    problems = []
    listed = {e["memberId"]: e["score"] for e in entries}
    if len(listed) != len(entries):
        problems.append(f"{board}: a member is listed twice")
    wanted = {member: score for member, score in scores.items() if score is not None}
    if listed != wanted:
        wrong = sorted(m for m in set(listed) | set(wanted) if listed.get(m) != wanted.get(m))
        problems.append(f"{board}: the listing disagrees with the members' scores for {wrong[:10]}")
    values = [e["score"] for e in entries]
    if values != sorted(values, reverse=order == "desc"):
        problems.append(f"{board}: the listing is out of order")
    if page["total"] != len(wanted):
        problems.append(f"{board}: total {page['total']}, {len(wanted)} members ranked")
    return problems


def run_checkers(target: Target, boards: list[tuple[str, str | None]]) -> dict[str, tuple[str, str]]:
    """The consistency checker on each (board, period) of the load's tables, as
    ``python -m devstack verify BOARD --period P`` runs it (``podium.consistency``, and its
    description of the report), in this process: label -> (verdict, description), the
    verdict ``consistent`` or ``differences``."""
    import boto3

    from devstack import template as template_module
    from devstack.verify import describe
    from podium.dal import Database
    from podium.wiring import Services

    spec = template_module.read(target.table_prefix)
    settings = spec.settings()
    client = boto3.client("dynamodb", endpoint_url=target.dynamodb)
    checker = Services(Database.connect(settings, client=client)).checker
    verdicts = {}
    for board, period in boards:
        report = checker.check(board, period=period)
        label = board if period is None else f"{board} ({period})"
        verdicts[label] = ("consistent" if report.ok else "differences", describe(report))
    return verdicts


def run_load(target: Target, token: str | None, plan: LoadPlan) -> LoadReport:
    """The load against a running stack, and every check after it."""
    plan.out.mkdir(parents=True, exist_ok=True)
    run = uuid.uuid4().hex[:8]
    api = Api(target.url, token)
    members = [f"m{index:04d}" for index in range(plan.members)]
    say(f"boards and {plan.members} members each on {target.url}")
    boards = create_boards(api, run, members)
    periods_before = {board: periods_of(api, board) for board in boards.values()}
    records, samples = plan.out / "records.jsonl", plan.out / "requests.json"
    records.unlink(missing_ok=True)
    samples.unlink(missing_ok=True)
    plan_file = plan.out / "plan.json"
    plan_file.write_text(
        json.dumps(
            {
                "token": token,
                "boards": boards,
                "members": members,
                "hot": plan.hot,
                "records": str(records),
                "requests": str(samples),
            }
        )
    )
    say(f"locust: {plan.users} clients for {plan.duration} (log: {plan.out / 'locust.log'})")
    locust = run_locust(target, plan, plan_file)
    if locust.returncode != 0 or not samples.exists():
        raise RuntimeError(f"locust failed (exit {locust.returncode}): see {plan.out / 'locust.log'}")
    say("waiting for the change stream to settle")
    settle_seconds = wait_for_quiet(api, boards, members, plan.settle_timeout)
    periods: dict[str, list[str]] = {}
    for board, before in periods_before.items():
        after = periods_of(api, board)
        if before is not None:
            periods[board] = sorted({before, after or before})
    specs = [
        BoardSpec(
            board,
            BOARD_SETTINGS[role]["operator"],
            BOARD_SETTINGS[role].get("order", "desc"),
            dict.fromkeys(members, Decimal(INITIAL[role])),
            one_period=len(periods.get(board, [])) <= 1,
        )
        for role, board in boards.items()
    ]
    say(f"settled in {settle_seconds:.1f} s; checking every score against the model")
    model = Model(specs)
    model.read_records(records)
    scores = read_scores(api, boards, members, periods)
    check: ModelCheck = model.check(model_scores(scores))
    orders = {spec.board_id: spec.order for spec in specs}
    listings = [
        problem
        for (board, period), by_member in scores.items()
        for problem in listing_problems(api, board, orders[board], period, by_member)
    ]
    say("consistency checker")
    checker = run_checkers(
        target, [(board, period) for board in boards.values() for period in periods_written(periods, board)]
    )
    if any(len(p) > 1 for p in periods.values()):
        plan.notes.append("the week changed during the load: the weekly board was checked across both weeks")
    return LoadReport(
        plan_command=plan.command,
        users=plan.users,
        duration=plan.duration,
        members=plan.members,
        hot=plan.hot,
        boards=boards,
        board_settings=BOARD_SETTINGS,
        requests=json.loads(samples.read_text()),
        model=check,
        settle_seconds=settle_seconds,
        listings=listings,
        checker=checker,
        notes=plan.notes,
    )


@contextmanager
def local_stack(out: Path, deliver_twice: bool) -> Iterator[Target]:
    """``make run``'s stack in this process, on a free port, with tokens checked; what its
    functions print goes to ``out/stack.log``."""
    from devstack.stack import Stack

    prefix = f"load{uuid.uuid4().hex[:6]}-"
    stack = Stack(port=0, table_prefix=prefix, announce=False, auth=True, deliver_twice=deliver_twice)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "stack.log").open("w") as log, redirect_stdout(log), redirect_stderr(log):
        try:
            stack.start()
            yield Target(stack.url, prefix, os.environ["AWS_ENDPOINT_URL_DYNAMODB"])
        finally:
            stack.stop()


def _seconds(text: str) -> int:
    """Locust's run time (``90``, ``60s``, ``5m``, ``1h30m``) in seconds."""
    total, number = 0, ""
    for char in text.strip():
        if char.isdigit():
            number += char
        elif char in "hms" and number:
            total += int(number) * {"h": 3600, "m": 60, "s": 1}[char]
            number = ""
        else:
            raise argparse.ArgumentTypeError(f"{text!r} is not a duration such as 60s, 5m or 1h30m")
    total += int(number or 0)
    if total <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: the duration must be positive")
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.loadrun", description=__doc__)
    parser.add_argument("--duration", default="60s", help="how long the clients run (60s, 5m; default 60s)")
    parser.add_argument("--users", type=int, default=64, help="concurrent clients (default 64)")
    parser.add_argument("--members", type=int, default=100, help="members on each board (default 100)")
    parser.add_argument(
        "--deliver-twice", action="store_true", help="the stream delivers every batch twice (as a retry)"
    )
    parser.add_argument("--out", type=Path, default=OUT, help="where the report and logs go")
    args = parser.parse_args(argv)
    seconds = _seconds(args.duration)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: DynamoDB Local is stopped
    command = f"make load DURATION={args.duration}" + (
        " USERS=" + str(args.users) if args.users != 64 else ""
    )
    plan = LoadPlan(args.users, args.duration, args.members, out=args.out, command=command)
    say("starting the local stack (DynamoDB Local, API with tokens checked, stream consumers)")
    load_average = os.getloadavg()
    with local_stack(args.out, args.deliver_twice) as target:
        token = admin_token(target.url, seconds + 3600)
        report = run_load(target, token, plan)
    report.machine = machine(load_average)
    report.stream = "every batch delivered twice" if args.deliver_twice else "every batch delivered once"
    (args.out / "report.md").write_text(markdown(report))
    say(summary(report))
    say(f"wrote {args.out / 'report.md'}")
    return 0 if report.ok else 1


def machine(load_average: tuple[float, float, float]) -> str:
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kib = int(meminfo.read_text().split()[1])
        memory = f", {kib / 1024 / 1024:.0f} GiB"
    return (
        f"{os.cpu_count()} cores ({model or platform.machine()}){memory}, "
        f"Python {platform.python_version()}, "
        f"load average {load_average[0]:.1f} when the run started"
    )


if __name__ == "__main__":
    sys.exit(main())
