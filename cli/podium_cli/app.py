"""``podium``: the command line of a Podium stack's operator.

Every command but ``redrive``, ``verify`` and ``plan`` talks to the HTTP API
through the typed client (clients/python), as an admin (podium_cli.connection says where
the URL and the token come from). Those two act on the table and the failure queue
directly, as no route does what they do; ``plan`` is arithmetic. An error of the API, of
the network or of a token is reported here, in one place, as one line on stderr.
"""

from __future__ import annotations

import sys

import typer

from podium_cli import boards
from podium_cli.exporting import export_command
from podium_cli.importing import import_command
from podium_cli.operations import redrive_command, verify_command
from podium_cli.output import errors
from podium_cli.plan import plan_command
from podium_cli.scores import scores_command
from podium_cli.tokens import token_command
from podium_client import ApiError, PodiumClientError, TokenError

# One example a command, shown under the list of commands (`podium --help`).
EXAMPLES = {
    "boards": 'podium boards create images --shards 3 --title "Most viewed images"',
    "scores": "podium scores images --min 50 --max 90",
    "import": "podium import images members.csv",
    "export": "podium export images --format jsonl -o images.jsonl",
    "token": "TOKEN=$(podium token --role player --member alice)",
    "verify": "podium verify images --repair",
    "redrive": "podium redrive --dry-run",
    "plan": "podium plan --writes 5000 --reads 20000 --members 1000000 --k 100",
}
EPILOG = "Examples, against `make run`:\n\n" + "\n".join(f"* `{line}`" for line in EXAMPLES.values())

app = typer.Typer(
    name="podium",
    help="The admin command of a Podium leaderboard stack: boards, imports and exports through "
    "the API; checks and repairs on the table. Run `podium COMMAND --help` for each.",
    epilog=EPILOG,
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,  # the errors below are one line, not a traceback
    context_settings={"help_option_names": ["-h", "--help"]},
    rich_markup_mode="markdown",
)
app.add_typer(boards.app, name="boards", short_help="List, show, create and configure boards [API]")
app.command("scores", short_help="The members whose score lies in a band, with their ranks [API]")(
    scores_command
)
app.command("import", short_help="Import members and scores from CSV or JSON Lines, resumably [API]")(
    import_command
)
app.command("export", short_help="Export a board's listing with data to CSV or JSON Lines [API]")(
    export_command
)
app.command("token", short_help="Print a token: the local stack's, or Cognito's client credentials")(
    token_command
)
app.command("verify", short_help="Check a board's index, head, count tree and counts; --repair [DynamoDB]")(
    verify_command
)
app.command("redrive", short_help="Replay the stream records of the failure queue [SQS, Streams]")(
    redrive_command
)
app.command("plan", short_help="Shards, RCU/WCU and the monthly bill of a board in AWS [arithmetic]")(
    plan_command
)

HOW_TO_AUTHENTICATE = (
    "no admin token: give --token (or PODIUM_TOKEN), or set PODIUM_CLIENT_ID, "
    "PODIUM_CLIENT_SECRET and PODIUM_TOKEN_URL for a deployed stack; only the local stack "
    "mints tokens itself (POST /_local/token)"
)


def run(argv: list[str] | None = None, prog_name: str = "podium") -> int:
    """Run the command line; the exit status (usage errors are typer's to report, status 2)."""
    try:
        app(args=argv, prog_name=prog_name)
    except SystemExit as done:
        return done.code if isinstance(done.code, int) else 0 if done.code is None else 1
    except TokenError as error:
        errors.print(f"error: {error}\n{HOW_TO_AUTHENTICATE}", markup=False)
        return 1
    except ApiError as error:
        errors.print(f"error: {error.status} {error.code}: {error.message}", markup=False)
        return 1
    except PodiumClientError as error:  # the API could not be reached
        errors.print(f"error: {error}", markup=False)
        return 1
    return 0


def main() -> None:
    sys.exit(run())
