"""template.yaml's side of who may call (issue 26): the member claim a deploy may name,
the stack's own Cognito pool taking access tokens only, the player client's settings, the
switch that turns the checks off refused in AWS, and that only this stack's API Gateway may
invoke the functions that trust its authorizer's verdict."""

from __future__ import annotations

import re
from typing import Any

import pytest

from devstack import template
from podium.config import LOCAL_STACK_MARKER, USER_WRITABLE_CLAIMS, AuthSwitchRefused, Settings

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


# -- PODIUM_AUTH=off: the local stack's, refused in AWS ----------------------------------

LAMBDA_RUNTIME = {
    "AWS_LAMBDA_FUNCTION_NAME": "podium-dev-TopFunction",
    "AWS_EXECUTION_ENV": "AWS_Lambda_python3.11",
}


@pytest.fixture
def outside_lambda(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in (*LAMBDA_RUNTIME, LOCAL_STACK_MARKER, "PODIUM_AUTH"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_local_stack_may_turn_the_checks_off(outside_lambda: pytest.MonkeyPatch) -> None:
    # Given the local stack's environment: its marker, and no Lambda runtime
    outside_lambda.setenv("PODIUM_AUTH", "off")
    outside_lambda.setenv(LOCAL_STACK_MARKER, "1")

    # When the settings are read, then every caller is an admin, as asked
    assert Settings.from_environment().auth_enabled is False


@pytest.mark.parametrize(
    "environment",
    [
        {"AWS_LAMBDA_FUNCTION_NAME": LAMBDA_RUNTIME["AWS_LAMBDA_FUNCTION_NAME"], LOCAL_STACK_MARKER: "1"},
        {"AWS_EXECUTION_ENV": LAMBDA_RUNTIME["AWS_EXECUTION_ENV"], LOCAL_STACK_MARKER: "1"},
        LAMBDA_RUNTIME,
        {},  # outside Lambda, but not the local stack either
    ],
    ids=["function name", "execution env", "lambda without the marker", "no marker"],
)
def test_a_function_outside_the_local_stack_refuses_to_turn_the_checks_off(
    outside_lambda: pytest.MonkeyPatch, environment: dict[str, str]
) -> None:
    # Given PODIUM_AUTH=off where the Lambda runtime's variables are (which no function
    # configuration can set or remove), or without the local stack's marker
    outside_lambda.setenv("PODIUM_AUTH", "off")
    for name, value in environment.items():
        outside_lambda.setenv(name, value)

    # When the settings are read, then they are refused, naming the switch
    with pytest.raises(AuthSwitchRefused, match="PODIUM_AUTH=off"):
        Settings.from_environment()


def test_checks_on_in_lambda_are_fine(outside_lambda: pytest.MonkeyPatch) -> None:
    for name, value in LAMBDA_RUNTIME.items():
        outside_lambda.setenv(name, value)
    assert Settings.from_environment().auth_enabled is True


def test_a_deployed_function_with_the_checks_off_answers_500_and_says_why(
    outside_lambda: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from podium import wiring
    from tests.emf import RouteFunctions

    # Given a route's function in AWS Lambda, configured with PODIUM_AUTH=off
    outside_lambda.setenv("PODIUM_AUTH", "off")
    outside_lambda.setenv(LOCAL_STACK_MARKER, "1")  # even a copied marker does not help
    for name, value in LAMBDA_RUNTIME.items():
        outside_lambda.setenv(name, value)
    wiring.reset()
    functions = RouteFunctions()
    try:
        # When it is invoked, then it answers 500 InternalError, serving nothing
        answer = functions.invoke("top", "any-board")
    finally:
        functions.unload()
        wiring.reset()
    assert answer["statusCode"] == 500
    assert '"InternalError"' in answer["body"]

    # And its log says why
    assert "PODIUM_AUTH=off is for the local stack only" in caplog.text


def test_the_template_never_sets_the_switch_nor_the_local_stacks_marker() -> None:
    text = (template.TEMPLATE).read_text()
    assert "PODIUM_AUTH" not in text
    assert LOCAL_STACK_MARKER not in text


# -- only this stack's API Gateway may invoke the functions --------------------------------


def transformed() -> dict[str, Any]:
    """template.yaml as CloudFormation gets it: through the SAM transform, offline."""
    import boto3
    from samtranslator.parser.parser import Parser  # type: ignore[import-untyped]
    from samtranslator.translator.translator import Translator  # type: ignore[import-untyped]
    from samtranslator.yaml_helper import yaml_parse  # type: ignore[import-untyped]

    document = yaml_parse(template.TEMPLATE.read_text())
    for resource in document["Resources"].values():
        properties = resource.get("Properties", {})
        for uri in ("CodeUri", "ContentUri"):  # sam build's job: an S3 location
            if uri in properties:
                properties[uri] = "s3://bucket/key"
    session = boto3.session.Session(region_name="us-east-1")
    result: dict[str, Any] = Translator({}, Parser(), boto_session=session).translate(document, {})
    return result


def source_arn(value: Any) -> str:
    """A permission's SourceArn as a string, pseudo parameters and API ids filled in."""
    if isinstance(value, dict) and "Fn::Sub" in value:
        sub = value["Fn::Sub"]
        text, variables = (sub, {}) if isinstance(sub, str) else sub
        for name, variable in variables.items():
            named = variable.get("Ref", "") if isinstance(variable, dict) else variable
            text = text.replace("${" + name + "}", f"<{named}>" if isinstance(variable, dict) else named)
        for name, filled in {"AWS::Partition": "aws", "AWS::Region": "r", "AWS::AccountId": "1"}.items():
            text = text.replace("${" + name + "}", filled)
        return re.sub(r"\$\{(\w+)\}", r"<\1>", text)
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return "<{}.{}>".format(*value["Fn::GetAtt"])
    return str(value)


def test_only_this_stacks_api_and_schedules_may_invoke_the_functions() -> None:
    # Given the template as CloudFormation deploys it
    resources = transformed()["Resources"]
    permissions = {
        name: resource["Properties"]
        for name, resource in resources.items()
        if resource["Type"] == "AWS::Lambda::Permission"
    }
    rules = {name for name, resource in resources.items() if resource["Type"] == "AWS::Events::Rule"}

    # Then no function has a URL of its own, and every permission names its source: API
    # Gateway only for this stack's REST or HTTP API, EventBridge only for its own rules
    assert not [name for name, resource in resources.items() if resource["Type"] == "AWS::Lambda::Url"]
    api = re.compile(r"arn:aws:execute-api:r:1:<(PodiumApi|PodiumHttpApi)>/\S+")
    assert permissions
    for name, properties in permissions.items():
        assert properties["Action"] == "lambda:InvokeFunction", name
        arn = source_arn(properties.get("SourceArn"))
        if properties["Principal"] == "apigateway.amazonaws.com":
            assert api.fullmatch(arn), (name, arn)
        else:
            assert properties["Principal"] == "events.amazonaws.com", name
            assert arn.removeprefix("<").split(".")[0] in rules, (name, arn)

    # And the functions that trust requestContext.authorizer (every route's) are among them
    invoked = {str(properties["FunctionName"]) for properties in permissions.values()}
    for name, resource in RESOURCES.items():
        events = resource.get("Properties", {}).get("Events", {}).values()
        if any(event["Type"] == "Api" for event in events):
            assert any(f"'{name}'" in function for function in invoked), name
