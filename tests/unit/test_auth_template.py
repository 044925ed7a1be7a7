"""template.yaml's side of who may call (issue 26): the member claim a deploy may name,
the stack's own Cognito pool taking access tokens only, the player client's settings, the
switch that turns the checks off refused in AWS, and that only this stack's API Gateway may
invoke the functions that trust its authorizer's verdict."""

from __future__ import annotations

import re
from typing import Any

import pytest

from devstack import template
from podium.config import USER_WRITABLE_CLAIMS, Settings

DOCUMENT = template.load()
RESOURCES: dict[str, Any] = DOCUMENT["Resources"]
PARAMETERS: dict[str, Any] = DOCUMENT["Parameters"]


def tag(value: Any, name: str) -> Any:
    """The argument of an intrinsic function ``!<name>``, failing on anything else."""
    assert getattr(value, "tag", None) == name, value
    return value.value


# -- the member claim: only one the player cannot change --------------------------------

REFUSED_CLAIMS = [*sorted(USER_WRITABLE_CLAIMS), "custom:memberId", "custom:player_id"]
ACCEPTED_CLAIMS = ["sub", "username", "cognito:username", "player_id", "dev:memberId", "oid"]


@pytest.mark.parametrize("claim", REFUSED_CLAIMS)
def test_a_deploy_cannot_name_a_claim_the_player_can_change(claim: str) -> None:
    # Given the AuthMemberClaim parameter's pattern (CloudFormation matches it whole)
    parameter = PARAMETERS["AuthMemberClaim"]

    # When a deploy names a claim the player can write (its email, a custom attribute),
    # then CloudFormation refuses the parameter, and a function given it refuses to start
    assert re.fullmatch(parameter["AllowedPattern"], claim) is None
    assert "sub" in parameter["ConstraintDescription"]
    with pytest.raises(ValueError, match="AUTH_MEMBER_CLAIM"):
        Settings(auth_member_claim=claim)


@pytest.mark.parametrize("claim", ACCEPTED_CLAIMS)
def test_a_claim_the_issuer_alone_sets_is_accepted(claim: str) -> None:
    parameter = PARAMETERS["AuthMemberClaim"]
    assert re.fullmatch(parameter["AllowedPattern"], claim) is not None
    assert Settings(auth_member_claim=claim).auth_member_claim == claim


def test_the_default_member_claim_passes_its_own_pattern() -> None:
    parameter = PARAMETERS["AuthMemberClaim"]
    assert re.fullmatch(parameter["AllowedPattern"], parameter["Default"]) is not None


# -- the stack's own Cognito pool: access tokens only ------------------------------------


def test_the_stacks_own_pool_takes_access_tokens_only() -> None:
    # Given the issuer the functions are given when AuthIssuerUrl is empty (UseCognito)
    issuer = tag(DOCUMENT["Globals"]["Function"]["Environment"]["Variables"]["AUTH_ISSUER"], "If")
    assert issuer[0] == "UseCognito"
    pool = tag(issuer[1], "Sub")
    url = pool.replace("${AWS::Region}", "eu-west-1").replace("${UserPool}", "eu-west-1_Ab12Cd")

    # When the functions read it, then they take Cognito access tokens only; another
    # OpenID Connect issuer's tokens need no token_use
    assert Settings(auth_issuer_url=url).auth_token_use == "access"
    assert Settings(auth_issuer_url="https://login.example.com").auth_token_use is None


def test_the_player_client_does_not_say_whether_a_user_exists() -> None:
    client = RESOURCES["PlayerClient"]["Properties"]
    assert client["PreventUserExistenceErrors"] == "ENABLED"
