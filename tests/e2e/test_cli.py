"""The ``podium`` command as an operator runs it: the installed script next to this
Python (the venv's bin), in a process of its own, from a directory outside the checkout
and without PYTHONPATH, against a local stack that checks tokens (it mints an admin's
through ``POST /_local/token``). What it did is read back over HTTP and compared with a
model: the file it imported, a sorted list."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import requests

from podium_cli import checkpoint as import_checkpoint
from podium_cli.checkpoint import default_path
from podium_client import LocalIssuer, PodiumClient, codec
from tests.helpers import assert_equal, eventually, expected_listing, unique_id
from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
PODIUM = Path(sys.executable).parent / "podium"
COMMANDS = ("boards", "scores", "import", "export", "token", "verify", "redrive", "plan")
TIMEOUT = 300
WORKERS = 16


def podium(
    *args: str, stack: LocalStack, cwd: Path, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    """``podium ARGS`` as a shell runs it: no PYTHONPATH, no token given (it mints one)."""
    done = subprocess.run(
        [str(PODIUM), *args],
        cwd=cwd,
        env={**clean_environment(stack), **(env or {})},
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    if check:
        assert done.returncode == 0, (
            f"podium {' '.join(args)}: {done.returncode}\n{done.stdout}\n{done.stderr}"
        )
    return done


def clean_environment(stack: LocalStack) -> dict[str, str]:
    dropped = ("PYTHONPATH", "PODIUM_TOKEN", "PODIUM_CLIENT_ID", "PODIUM_CLIENT_SECRET", "PODIUM_TOKEN_URL")
    return {**{k: v for k, v in os.environ.items() if k not in dropped}, "PODIUM_API": stack.url}


@pytest.fixture(scope="module")
def admin(auth_stack: LocalStack) -> PodiumClient:
    """The test's own reads, through the typed client."""
    return PodiumClient(auth_stack.url, token=LocalIssuer(auth_stack.url))


def members_csv(path: Path, count: int) -> dict[str, tuple[Decimal, dict[str, Any]]]:
    """A CSV of ``count`` members with distinct scores of two decimals and a little data;
    the model of what the board must then hold."""
    chosen = random.Random(count)
    scores = chosen.sample(range(-500_000, 5_000_000), count)
    model = {
        f"player-{n:05d}": (Decimal(score).scaleb(-2), {"level": n % 9}) for n, score in enumerate(scores)
    }
    lines = ["memberId,score,data"]
    lines += [f'{member},{score},"{{""level"": {data["level"]}}}"' for member, (score, data) in model.items()]
    path.write_text("\n".join(lines) + "\n")
    return model


def exported(stack: LocalStack, cwd: Path, board: str, *args: str) -> list[dict[str, Any]]:
    text = podium("export", board, "--format", "jsonl", *args, stack=stack, cwd=cwd).stdout
    return [json.loads(line, parse_float=Decimal) for line in text.splitlines()]


def listing_of(model: dict[str, tuple[Decimal, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The export a model board must give: higher is better, ties share a rank."""
    scores = {member: score for member, (score, _) in model.items()}
    return [
        {"rank": rank, "memberId": member, "score": score, "data": model[member][1]}
        for rank, member, score in expected_listing(scores)
    ]


def on_board(client: PodiumClient, board: str, members: list[str]) -> set[str]:
    """The members the board holds a score for (POST .../ranks, 100 at a time)."""
    found: set[str] = set()
    for start in range(0, len(members), 100):
        found |= {entry.member_id for entry in client.ranks(board, members[start : start + 100])}
    return found


def test_help_lists_every_command_each_with_an_example(auth_stack, tmp_path):
    listed = podium("--help", stack=auth_stack, cwd=tmp_path).stdout
    for command in COMMANDS:
        assert f" {command} " in listed
        own = podium(*command.split(), "--help", stack=auth_stack, cwd=tmp_path).stdout
        assert "Example" in own, command
    for sub in ("list", "show", "create", "configure"):
        assert (
            "Example: podium boards" in podium("boards", sub, "--help", stack=auth_stack, cwd=tmp_path).stdout
        )


def test_boards_create_list_show_and_configure(auth_stack, tmp_path, admin):
    # Given a new board made by the command
    board = unique_id("cli-board")
    made = podium(
        "boards", "create", board, "--shards", "3", "--order", "asc", "--title", "Lap times",
        "--public-read", "--limits", '{"maxValue": 500.5}', "--json", stack=auth_stack, cwd=tmp_path,
    )  # fmt: skip
    expected = {
        "boardId": board,
        "order": "asc",
        "operator": "increment",
        "tieBreak": "shared",
        "shards": 3,
        "title": "Lap times",
        "publicRead": True,
        "clientWrites": False,
        "limits": {"maxValue": Decimal("500.5")},
    }
    shown = json.loads(made.stdout, parse_float=Decimal)
    assert {k: shown[k] for k in expected} == expected

    # When it is made again with the same settings it is confirmed; with others, refused
    again = podium(
        "boards", "create", board, "--shards", "3", "--order", "asc", stack=auth_stack, cwd=tmp_path
    )
    assert "exists" in again.stdout
    refused = podium("boards", "create", board, "--shards", "4", stack=auth_stack, cwd=tmp_path, check=False)
    assert refused.returncode == 1
    assert "409 Conflict" in refused.stderr

    # And configured: only the settings named change
    podium(
        "boards", "configure", board, "--no-public-read", "--client-writes",
        "--limits", '{"minValue": 0, "maxSubmissionsPerMinute": 30}', stack=auth_stack, cwd=tmp_path,
    )  # fmt: skip

    # Then show, list and the API agree on the board as configured
    after = json.loads(podium("boards", "show", board, "--json", stack=auth_stack, cwd=tmp_path).stdout)
    configured = {
        **expected,
        "publicRead": False,
        "clientWrites": True,
        "limits": {"minValue": 0, "maxSubmissionsPerMinute": 30},
    }
    assert {k: after[k] for k in configured} == configured
    listed = json.loads(podium("boards", "list", "--json", stack=auth_stack, cwd=tmp_path).stdout)
    assert [b for b in listed if b["boardId"] == board] == [after]
    read = admin.get_board(board)
    assert (read.order, read.shards, read.public_read, read.client_writes) == ("asc", 3, False, True)
    table = podium("boards", "list", stack=auth_stack, cwd=tmp_path).stdout
    assert board[:8] in table


def test_scores_prints_a_band_as_the_sorted_list_has_it(auth_stack, tmp_path, admin):
    # Given a board with ties, decimals and a negative score
    board = unique_id("cli-band")
    admin.create_board(board, shards=3)
    scores = {"ana": Decimal("82.3"), "ben": Decimal(94), "cid": Decimal("82.30"), "dia": Decimal(16)}
    scores |= {"eve": Decimal("-3.5"), "fay": Decimal(94), "gus": Decimal("0.5")}
    for member, score in scores.items():
        admin.put_member(board, member, score=score)
    listing = expected_listing(scores)

    # When the band 0.5 .. 82.3 is asked for, as JSON and as a table
    band = ("scores", board, "--min", "0.5", "--max", "82.3")
    found = json.loads(podium(*band, "--json", stack=auth_stack, cwd=tmp_path).stdout, parse_float=Decimal)
    table = podium(*band, stack=auth_stack, cwd=tmp_path).stdout

    # Then it is the sorted list's entries in the band, ranks and exact scores
    expected = [e for e in listing if Decimal("0.5") <= e[2] <= Decimal("82.3")]
    assert [(e["rank"], e["memberId"], e["score"]) for e in found] == expected
    rows = [line.split() for line in table.splitlines() if any(m in line.split() for m in scores)]
    assert [(int(row[1]), row[3], Decimal(row[5])) for row in rows] == expected
    # and --limit cuts it, a bad bound is refused before anything is sent
    two = json.loads(podium(*band, "--limit", "2", "--json", stack=auth_stack, cwd=tmp_path).stdout)
    assert [e["memberId"] for e in two] == [m for _, m, _ in expected[:2]]
    refused = podium("scores", board, "--min", "lots", stack=auth_stack, cwd=tmp_path, check=False)
    assert refused.returncode == 2
    assert "--min" in refused.stderr


def test_announce_top_is_set_at_creation_changed_by_configure_and_refused_where_no_period_ends(
    auth_stack, tmp_path, admin
):
    # Given a weekly board made with announceTop 20
    board = unique_id("cli-weekly")
    made = podium(
        "boards", "create", board, "--reset", "weekly", "--announce-top", "20", "--json",
        stack=auth_stack, cwd=tmp_path,
    )  # fmt: skip
    assert json.loads(made.stdout)["announceTop"] == 20

    # When configure lowers it (and leaves the rest)
    podium("boards", "configure", board, "--announce-top", "5", stack=auth_stack, cwd=tmp_path)

    # Then the API shows 5, the period results job's setting; the board still resets weekly
    read = admin.get_board(board)
    assert (read.reset, read.announce_top) == ("weekly", 5)
    # And on a board that never resets it is refused, naming the setting
    never = unique_id("cli-never")
    podium("boards", "create", never, stack=auth_stack, cwd=tmp_path)
    refused = podium(
        "boards", "configure", never, "--announce-top", "5", stack=auth_stack, cwd=tmp_path, check=False
    )
    assert refused.returncode == 1
    assert "400" in refused.stderr
    assert "announceTop" in refused.stderr


def test_an_import_killed_midway_resumes_to_a_board_equal_to_the_file(auth_stack, tmp_path, admin):
    # Given a board and a CSV of 1,000 members (the kill comes once 300 are written down,
    # with most of the file still to send: the resumed run sends the rest)
    board = unique_id("cli-import")
    podium("boards", "create", board, "--shards", "4", stack=auth_stack, cwd=tmp_path)
    source = tmp_path / "members.csv"
    model = members_csv(source, 1_000)
    journal = default_path(source, board)

    # When the import is killed (SIGKILL) once its checkpoint shows progress
    command = [str(PODIUM), "import", board, source.name, "--workers", str(WORKERS), "--rate", "400"]
    running = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=clean_environment(auth_stack),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        eventually(lambda: assert_progress(journal, at_least=300), timeout=TIMEOUT, interval=0.05)
    finally:
        running.send_signal(signal.SIGKILL)
        running.communicate(timeout=TIMEOUT)
    written_down = import_checkpoint.read(journal)
    assert written_down is not None
    assert written_down.count() < len(model), "the import ended before it was killed"
    time.sleep(1)  # a write the killed process had sent finishes in the stack: count it below
    applied = on_board(admin, board, list(model))

    # And the same command is run again
    resumed = podium(*command[1:], "--json", stack=auth_stack, cwd=tmp_path)
    summary = json.loads(resumed.stdout)

    # Then it sent only what the checkpoint did not have, which is at most the writes that
    # were in flight when it was killed, and finished the file
    assert summary["complete"]
    assert summary["doneEarlier"] == written_down.count()
    assert summary["sent"] == len(model) - written_down.count()
    sent_again = len(applied) - written_down.count()
    assert 0 <= sent_again <= WORKERS
    assert not journal.exists()

    # And the board is the file: every member's score and data, in order, and its count
    assert exported(auth_stack, tmp_path, board) == listing_of(model)
    eventually(lambda: assert_equal(admin.get_board(board).member_count, len(model)), timeout=120)


def assert_progress(journal: Path, at_least: int) -> None:
    progress = import_checkpoint.read(journal)
    assert progress is not None
    assert progress.count() >= at_least


def test_a_jsonl_import_with_a_bad_line_then_an_export_of_the_period(auth_stack, tmp_path, admin):
    # Given a weekly board and a JSON Lines file of 60 members, one line of them bad
    board = unique_id("cli-weekly")
    podium("boards", "create", board, "--reset", "weekly", "--shards", "2", stack=auth_stack, cwd=tmp_path)
    model = {
        f"runner-{n}": (Decimal(n * 7 % 23) + Decimal("0.1"), {"split": Decimal("0.2") * n, "n": n})
        for n in range(60)
    }
    lines = [
        codec.dumps({"memberId": member, "score": score, "data": data})
        for member, (score, data) in model.items()
    ]
    lines.insert(30, '{"memberId": "runner-x", "score": "fast"}')
    source = tmp_path / "runs.jsonl"
    source.write_text("\n".join(lines) + "\n")

    # When it is imported
    done = podium("import", board, str(source), stack=auth_stack, cwd=tmp_path, check=False)

    # Then the bad line is reported by its number, the rest are on the board, exactly
    assert done.returncode == 1
    assert "line 31: score must be a JSON number" in done.stderr
    assert "imported 60 members" in done.stdout
    for member in ("runner-0", "runner-13", "runner-59"):
        read = admin.get_member(board, member)
        assert (read.score, read.data) == model[member]

    # And the export of the current period, by name and by its id, is the model's listing
    period = admin.get_board(board).period
    assert period is not None
    assert exported(auth_stack, tmp_path, board, "--period", "current") == listing_of(model)
    assert exported(auth_stack, tmp_path, board, "--period", period) == listing_of(model)
    csv_text = podium("export", board, "--period", period, stack=auth_stack, cwd=tmp_path).stdout
    assert csv_text.splitlines()[0] == "rank,memberId,score,data"
    assert len(csv_text.splitlines()) == 61


def test_tokens_minted_by_the_command_carry_their_role(auth_stack, tmp_path):
    # Given
    board = unique_id("cli-token")
    admin_token = podium("token", stack=auth_stack, cwd=tmp_path).stdout.strip()
    player_token = podium(
        "token", "--role", "player", "--member", "alice", stack=auth_stack, cwd=tmp_path
    ).stdout.strip()

    def call(method: str, path: str, token: str) -> requests.Response:
        headers = {"Authorization": f"Bearer {token}"}
        return requests.request(method, f"{auth_stack.url}{path}", json={}, headers=headers, timeout=30)

    # Then the admin's may create a board; the player's may read it, not change it
    assert call("PUT", f"/boards/{board}", admin_token).status_code == 201
    assert call("GET", f"/boards/{board}", player_token).status_code == 200
    assert call("PUT", f"/boards/{board}", player_token).status_code == 403
    missing_member = podium("token", "--role", "player", stack=auth_stack, cwd=tmp_path, check=False)
    assert missing_member.returncode == 2
    assert "--member" in missing_member.stderr


def test_verify_finds_an_imported_board_consistent(auth_stack, tmp_path, dynamodb_endpoint, admin):
    # Given a board of 50 members imported by the command
    board = unique_id("cli-verify")
    podium("boards", "create", board, "--shards", "3", stack=auth_stack, cwd=tmp_path)
    model = members_csv(tmp_path / "verify.csv", 50)
    podium("import", board, "verify.csv", stack=auth_stack, cwd=tmp_path)
    eventually(lambda: assert_equal(admin.get_board(board).member_count, len(model)), timeout=120)

    # When `podium verify` reads the stack's table
    def verify() -> subprocess.CompletedProcess[str]:
        done = podium(
            "verify", board, "--table-prefix", auth_stack.table_prefix, "--json",
            stack=auth_stack, cwd=tmp_path, env={"AWS_ENDPOINT_URL_DYNAMODB": dynamodb_endpoint}, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        return done

    # Then, once the stream has carried the writes, it is consistent
    report = json.loads(eventually(verify, timeout=120).stdout)
    assert report["ok"] is True
    assert report["counts"]["members"] == len(model)


def test_the_documented_example_prints_what_the_docs_show(auth_stack, tmp_path):
    # Given docs/cli.md's first run, with the venv's podium for .venv/bin/podium
    section = (ROOT / "docs" / "cli.md").read_text().split("## A first run", 1)[1].split("\n## ", 1)[0]
    script = section.split("```bash\n", 1)[1].split("```", 1)[0].replace(".venv/bin/podium", str(PODIUM))
    shown = section.split("```text\n", 1)[1].split("```", 1)[0]

    # When it runs twice (a board confirmed, an import sent again: the same outcome)
    for _ in range(2):
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=tmp_path,
            env=clean_environment(auth_stack),
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )

        # Then the export is what the docs show
        assert done.returncode == 0, done.stderr
        assert done.stdout.endswith(shown)
