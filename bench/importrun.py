"""``make bench-import N=100000``: how fast ``podium import`` loads a board, and proof that
the board then holds the file.

    python -m bench.importrun [--members 100000] [--workers 16] [--seed 1]

It writes a CSV of ``--members`` members (random scores of three decimals, as Decimals,
and a little data) into a temporary directory, starts ``make run``'s stack in this
process on a free port with tokens checked (unless ``PODIUM_API`` names a stack to use,
with ``PODIUM_TOKEN`` or client credentials as ``podium`` reads them), creates a board,
and runs the installed ``podium import`` on the file. Then it checks the board: its
``memberCount`` (kept by the stream, so waited for) against the file's, and its top 1,000
(read consistently) against the file's members sorted by score. It prints the members a
second that ``podium import`` measured (the import alone), the wall time of the command
(with reading and hashing the file), and exits 1 if the board differs from the file.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from decimal import Decimal
from pathlib import Path

from bench.loadrun import machine, say
from podium_cli.connection import admin_client
from podium_client import PodiumClient

PODIUM = Path(sys.executable).parent / "podium"
TOP = 1_000  # the largest page of `top`
SETTLE_TIMEOUT = 900.0  # seconds for memberCount to reach the file's count


def write_members(path: Path, members: int, seed: int) -> dict[str, Decimal]:
    """A CSV of ``members`` rows; their scores, by member."""
    chosen = random.Random(seed)
    scores: dict[str, Decimal] = {}
    with path.open("w") as csv:
        csv.write("memberId,score,data\n")
        for number in range(members):
            member = f"member-{number:07d}"
            score = Decimal(chosen.randrange(-(10**6), 10**9)).scaleb(-3)
            scores[member] = score
            csv.write(f'{member},{score},"{{""team"": ""t{number % 16}"", ""level"": {number % 50}}}"\n')
    return scores


def sorted_top(scores: dict[str, Decimal], count: int) -> list[tuple[int, str, Decimal]]:
    """The first ``count`` of the listing: higher is better, ties share a rank (the number
    of better scores plus one) and are listed by member id."""
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    top: list[tuple[int, str, Decimal]] = []
    for position, (member, score) in enumerate(ordered[:count]):
        tied = position > 0 and score == top[-1][2]
        top.append((top[-1][0] if tied else position + 1, member, score))
    return top


@contextmanager
def target_stack(log_path: Path) -> Iterator[str]:
    """``PODIUM_API``, or ``make run``'s stack in this process on a free port."""
    if os.environ.get("PODIUM_API"):
        yield os.environ["PODIUM_API"]
        return
    from devstack.stack import Stack

    stack = Stack(port=0, table_prefix=f"imp{uuid.uuid4().hex[:6]}-", announce=False, auth=True)
    with log_path.open("w") as log, redirect_stdout(log), redirect_stderr(log):
        try:
            stack.start()
            yield stack.url
        finally:
            stack.stop()


def run_import(api: str, board: str, csv: Path, workers: int) -> tuple[dict[str, object], float, float]:
    """``podium import`` as an operator runs it; its JSON summary, its wall time and the CPU
    seconds it used (to tell the command's cost from the stack's)."""
    started = time.monotonic()
    cpu_before = _children_cpu()
    done = subprocess.run(  # noqa: S603 - the venv's own podium, with a fixed argument list
        [str(PODIUM), "import", board, str(csv), "--workers", str(workers), "--json"],
        env={**os.environ, "PODIUM_API": api},
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - started
    cpu = _children_cpu() - cpu_before
    if done.returncode != 0:
        raise SystemExit(f"podium import failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    summary: dict[str, object] = json.loads(done.stdout)
    return summary, wall, cpu


def _children_cpu() -> float:
    """CPU seconds of the child processes waited for so far (the stack's DynamoDB Local is
    still running, so not among them)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def check_board(client: PodiumClient, board: str, scores: dict[str, Decimal]) -> list[str]:
    """What differs between the board and the file (nothing, when all is well)."""
    problems: list[str] = []
    started = time.monotonic()
    count = client.get_board(board).member_count
    while count != len(scores) and time.monotonic() - started < SETTLE_TIMEOUT:
        time.sleep(1)
        count = client.get_board(board).member_count
    say(f"memberCount {count:,} ({time.monotonic() - started:,.0f} s after the import ended)")
    if count != len(scores):
        problems.append(f"memberCount is {count:,}, the file has {len(scores):,} members")
    page = client.top(board, limit=min(TOP, len(scores)), consistent=True)
    listed = [(entry.rank, entry.member_id, entry.score) for entry in page.entries]
    expected = sorted_top(scores, TOP)
    if listed != expected:
        wrong = next(n for n, (a, b) in enumerate(zip(listed, expected, strict=False)) if a != b)
        problems.append(f"the top {TOP:,} differs from the file's at position {wrong + 1}")
    else:
        say(f"the top {len(listed):,} equals the file's members sorted by score")
    return problems


def import_and_check(api: str, csv: Path, scores: dict[str, Decimal], workers: int) -> list[str]:
    # The admin's token as `podium` finds it: PODIUM_TOKEN, client credentials, or minted.
    with admin_client(api, os.environ.get("PODIUM_TOKEN"), timeout=60) as client:
        board = f"bench-import-{uuid.uuid4().hex[:8]}"
        client.create_board(board, title="make bench-import")
        say(f"podium import {board} ({workers} workers) against {api}")
        summary, wall, cpu = run_import(api, board, csv, workers)
        say(
            f"imported {summary['sent']:,} members in {summary['seconds']} s: "
            f"{summary['membersPerSecond']:,} members/s (the command's wall time {wall:,.1f} s, "
            f"with reading and hashing the file; it used {cpu:,.1f} s of CPU)"
        )
        return check_board(client, board, scores)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.importrun", description=__doc__)
    parser.add_argument("--members", type=int, default=100_000, help="rows of the CSV (default 100,000)")
    parser.add_argument("--workers", type=int, default=16, help="podium import --workers (default 16)")
    parser.add_argument("--seed", type=int, default=1, help="of the random scores (default 1)")
    args = parser.parse_args(argv)
    load_average = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="podium-bench-import-") as folder:
        csv = Path(folder) / "members.csv"
        scores = write_members(csv, args.members, args.seed)
        say(f"wrote {args.members:,} members to {csv} ({csv.stat().st_size / 1e6:,.1f} MB)")
        with target_stack(Path(folder) / "stack.log") as api:
            problems = import_and_check(api, csv, scores, args.workers)
    say(f"machine: {machine(load_average)}")
    for problem in problems:
        say(f"FAILED: {problem}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
