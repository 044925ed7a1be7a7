"""``podium token``: print a token, from the local stack's issuer or, against AWS, from
Cognito's client-credentials grant."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated

import typer

from podium_cli.connection import ApiOption, api_url, client_credentials
from podium_cli.output import print_line
from podium_client import local_token


class Role(StrEnum):
    admin = "admin"
    player = "player"


def token_command(
    role: Annotated[Role, typer.Option(help="admin (everything) or player (acts as --member)")] = Role.admin,
    member: Annotated[str | None, typer.Option(help="The player's memberId (with --role player)")] = None,
    expires_in: Annotated[
        int, typer.Option("--expires-in", help="Seconds the token lasts (the local stack's tokens)")
    ] = 3600,
    api: ApiOption = None,
) -> None:
    """Print a token: minted by the local stack (POST /_local/token), or, when
    PODIUM_CLIENT_ID, PODIUM_CLIENT_SECRET and PODIUM_TOKEN_URL are set, an admin's from
    Cognito's client-credentials grant (a deployed stack's GameServerClient, TokenUrl).

    Example: TOKEN=$(podium token --role player --member alice)
    """
    if role is Role.player and not member:
        raise typer.BadParameter("a player's token needs --member", param_hint="--member")
    credentials = client_credentials()
    if credentials is not None:
        if role is not Role.admin:
            raise typer.BadParameter(
                "client credentials give an admin's token; a player's comes from your game's login",
                param_hint="--role",
            )
        print_line(credentials())
        return
    member_id = member if role is Role.player else None
    print_line(local_token(api_url(api), role.value, member_id, expires_in=expires_in))
