"""Where the API commands send their calls, and with which token.

The API's base URL: ``--api``, else ``PODIUM_API``, else the local stack that ``make run``
started from this checkout (its ``.devstack/running.json``), else http://127.0.0.1:3000.

The admin's token: ``--token``, else ``PODIUM_TOKEN``, else Cognito's client-credentials
grant when ``PODIUM_CLIENT_ID``, ``PODIUM_CLIENT_SECRET`` and ``PODIUM_TOKEN_URL`` are set
(a deployed stack: ``GameServerClientId``, its secret, ``TokenUrl``), else one the local
stack mints (``POST /_local/token``, which only the local stack has).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated

import typer

import devstack
from podium_client import ClientCredentials, LocalIssuer, PodiumClient
from podium_client.tokens import TokenSource

DEFAULT_API = "http://127.0.0.1:3000"
ADMIN_SCOPE = "podium/admin"
CREDENTIALS = ("PODIUM_CLIENT_ID", "PODIUM_CLIENT_SECRET", "PODIUM_TOKEN_URL")
# Where `make run` says which port it serves (devstack.stack.RUNNING; read here without
# importing the stack, which brings boto3 and the gateway).
RUNNING = Path(devstack.__file__).resolve().parent.parent / ".devstack" / "running.json"

ApiOption = Annotated[
    str | None,
    typer.Option(
        "--api",
        envvar="PODIUM_API",
        help="The API's base URL [default: the running `make run`'s, else http://127.0.0.1:3000]",
        show_default=False,
    ),
]
TokenOption = Annotated[
    str | None,
    typer.Option(
        "--token",
        envvar="PODIUM_TOKEN",
        help="An admin's token [default: Cognito's client credentials from PODIUM_CLIENT_ID, "
        "PODIUM_CLIENT_SECRET and PODIUM_TOKEN_URL, else one the local stack mints]",
        show_default=False,
    ),
]


def api_url(given: str | None) -> str:
    if given:
        return given.rstrip("/")
    try:
        return str(json.loads(RUNNING.read_text())["api"]).rstrip("/")
    except (OSError, ValueError, KeyError):
        return DEFAULT_API


def client_credentials() -> ClientCredentials | None:
    """The client-credentials grant of the environment's app client, when it names one."""
    given = [os.environ.get(name, "") for name in CREDENTIALS]
    if not any(given):
        return None
    missing = [name for name, value in zip(CREDENTIALS, given, strict=True) if not value]
    if missing:
        raise typer.BadParameter(f"client credentials need {', '.join(CREDENTIALS)}; {missing[0]} is not set")
    client_id, secret, token_url = given
    return ClientCredentials(token_url, client_id, secret, scope=ADMIN_SCOPE)


def admin_token(api: str, token: str | None) -> TokenSource:
    """The token source of an admin, in the order the module's docstring gives."""
    if token:
        return token
    return client_credentials() or LocalIssuer(api)


def admin_client(api: str | None, token: str | None, *, timeout: float = 30.0) -> PodiumClient:
    """A client of the API as an admin (retries, backoff and exact Decimals are the
    client's)."""
    url = api_url(api)
    return PodiumClient(url, token=admin_token(url, token), timeout=timeout)
