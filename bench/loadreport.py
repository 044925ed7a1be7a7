"""The report of ``make load``: throughput, p50/p99 per route, errors by status, the model
check, the listings and the consistency checker's verdict, as Markdown and as a summary."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from bench.loadmodel import ModelCheck

# Statuses that are no error under load (API.md): 409 for a keyed submission whose first
# attempt is still being applied (the client retries), 429 when the database throttled and
# retries were spent. Anything else but 2xx fails the run.
EXPECTED_STATUSES = {409: "Conflict: a keyed submission still in flight", 429: "Throttled"}
KEYED_ROUTES = ("POST score (key)", "POST score (replay)")


def percentile(samples: list[float], share: float) -> float:
    """The nearest-rank percentile of sorted ``samples``."""
    return samples[max(0, math.ceil(share * len(samples)) - 1)]


def expected(route: str, status: int) -> bool:
    if 200 <= status < 300:
        return True
    return status == 429 or (status == 409 and route in KEYED_ROUTES)


@dataclass
class RouteStats:
    route: str
    count: int
    per_second: float
    p50: float
    p99: float
    slowest: float
    errors: int  # answers that are not 2xx and not expected

    @staticmethod
    def of(route: str, samples: list[list[float]], seconds: float) -> RouteStats:
        times = sorted(ms for _, ms in samples)
        errors = sum(1 for status, _ in samples if not expected(route, int(status)))
        return RouteStats(
            route,
            len(samples),
            len(samples) / seconds,
            percentile(times, 0.5),
            percentile(times, 0.99),
            times[-1],
            errors,
        )


@dataclass
class LoadReport:
    plan_command: str
    users: int
    duration: str
    members: int
    hot: int
    boards: dict[str, str]
    board_settings: dict[str, dict[str, Any]]
    requests: dict[str, Any]  # bench/locustfile.py's: started, stopped, samples per route
    model: ModelCheck
    settle_seconds: float
    listings: list[str]
    checker: dict[str, tuple[str, str]]  # board -> (verdict, output)
    notes: list[str] = field(default_factory=list)
    machine: str = ""
    stream: str = ""
    date: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"))

    @property
    def seconds(self) -> float:
        return float(self.requests["stopped"]) - float(self.requests["started"])

    @property
    def routes(self) -> list[RouteStats]:
        samples = self.requests["samples"]
        return [RouteStats.of(route, samples[route], self.seconds) for route in sorted(samples)]

    @property
    def statuses(self) -> Counter[tuple[str, int]]:
        """(route, status) -> count, for every answer that is not 2xx."""
        found: Counter[tuple[str, int]] = Counter()
        for route, samples in self.requests["samples"].items():
            found.update((route, int(status)) for status, _ in samples if not 200 <= int(status) < 300)
        return found

    @property
    def failures(self) -> list[str]:
        """Why the run failed; empty when it passed."""
        reasons = []
        unexpected = sum(n for (route, status), n in self.statuses.items() if not expected(route, status))
        if unexpected:
            reasons.append(f"{unexpected} answers were errors (5xx, no answer, or an unexpected 4xx)")
        if self.model.lost:
            reasons.append(f"{len(self.model.lost)} members lost an acknowledged write")
        if self.model.doubled:
            reasons.append(f"{len(self.model.doubled)} members had a write applied twice")
        others = [f for f in self.model.findings if f.kind not in ("lost", "doubled")]
        if others:
            reasons.append(f"{len(others)} answers disagreed with the model")
        if self.listings:
            reasons.append(f"{len(self.listings)} listings disagreed with the members' scores")
        differing = [
            board for board, (verdict, _) in self.checker.items() if verdict not in ("consistent", "not run")
        ]
        if differing:
            reasons.append(f"the consistency checker found differences on {', '.join(differing)}")
        return reasons

    @property
    def ok(self) -> bool:
        return not self.failures


def summary(report: LoadReport) -> str:
    """What the console shows at the end of a run."""
    total = sum(r.count for r in report.routes)
    lines = [
        f"{total} requests in {report.seconds:.0f} s from {report.users} clients: "
        f"{total / report.seconds:.1f}/s",
        f"{'route':24} {'requests':>9} {'/s':>7} {'p50 ms':>8} {'p99 ms':>8} {'errors':>7}",
    ]
    for route in report.routes:
        lines.append(
            f"{route.route:24} {route.count:9d} {route.per_second:7.1f} {route.p50:8.0f} {route.p99:8.0f} "
            f"{route.errors:7d}"
        )
    model = report.model
    lines.append(
        f"model: {model.members} members, {model.acked} acknowledged writes ({model.replays} replays), "
        f"{model.unknown} unknown; lost {len(model.lost)}, doubled {len(model.doubled)}, "
        f"other findings {len(model.findings) - len(model.lost) - len(model.doubled)}"
    )
    for finding in model.findings[:20]:
        lines.append(f"  {finding.kind}: {finding.board}/{finding.member}: {finding.detail}")
    lines += [f"  listing: {problem}" for problem in report.listings[:20]]
    for board, (verdict, output) in report.checker.items():
        lines.append(f"checker {board}: {verdict}" + (f"\n{output}" if verdict != "consistent" else ""))
    lines.append("PASS" if report.ok else "FAIL: " + "; ".join(report.failures))
    return "\n".join(lines)


def markdown(report: LoadReport) -> str:
    """The report as the Markdown that docs/reliability.md quotes."""
    total = sum(r.count for r in report.routes)
    model = report.model
    boards = ", ".join(
        f"`{role}` ({', '.join(f'{k} {v}' for k, v in report.board_settings[role].items() if k != 'title')})"
        for role in report.boards
    )
    lines = [
        f"Command: `{report.plan_command}`, {report.date}. Machine: {report.machine}.",
        "",
        f"The local stack (`make run`'s: DynamoDB Local in memory, tokens checked, {report.stream}), "
        f"{report.users} locust clients without think time for {report.duration}, on four boards "
        f"of {report.members} members each: {boards}. {report.hot} members of each board take 30% "
        "of the writes.",
        "",
        f"**{total} requests in {report.seconds:.0f} s: {total / report.seconds:.1f} requests/s.**",
        "",
        "| route | requests | per second | p50 ms | p99 ms | slowest ms | errors |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in report.routes:
        lines.append(
            f"| {r.route} | {r.count} | {r.per_second:.1f} | {r.p50:.0f} | {r.p99:.0f} | {r.slowest:.0f} "
            f"| {r.errors} |"
        )
    lines += ["", "Answers other than 2xx:", ""]
    if report.statuses:
        lines += ["| route | status | count | |", "|---|---:|---:|---|"]
        for (route, status), count in sorted(report.statuses.items()):
            meaning = EXPECTED_STATUSES.get(status, "") if expected(route, status) else "**error**"
            lines.append(f"| {route} | {status or 'no answer'} | {count} | {meaning} |")
    else:
        lines.append("none.")
    lines += [
        "",
        f"After the load the change stream settled in {report.settle_seconds:.1f} s (every board "
        "counting every member, no event left to fold, each head equal to its index).",
        "",
        "| model check | |",
        "|---|---:|",
        f"| members checked | {model.members} |",
        f"| acknowledged score submissions (all the attempts of a key count once) | "
        f"{model.acked - model.acked_events} |",
        f"| acknowledged events (all the sends of an eventId count once) | {model.acked_events} |",
        f"| acknowledged replays of a key, answered as the first | {model.replays} |",
        f"| refused writes (4xx: nothing changed) | {model.refused} |",
        f"| writes without an answer or with a 5xx (either outcome allowed) | {model.unknown} |",
        f"| lost (members whose score lacks an acknowledged write) | {len(model.lost)} |",
        f"| doubled (members whose score has a write twice) | {len(model.doubled)} |",
        f"| answers inconsistent with the operator or a replay | "
        f"{len(model.findings) - len(model.lost) - len(model.doubled)} |",
        f"| listings (`consistent=true`) that disagree with the members' scores | {len(report.listings)} |",
        "",
        "| consistency checker | verdict |",
        "|---|---|",
    ]
    lines += [f"| `{board}` | {verdict} |" for board, (verdict, _) in report.checker.items()]
    lines += ["", ("**Result: pass.**" if report.ok else "**Result: FAIL**: " + "; ".join(report.failures))]
    lines += [f"\nNote: {note}." for note in report.notes]
    return "\n".join(lines) + "\n"
