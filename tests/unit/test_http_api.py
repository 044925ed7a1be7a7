"""template.yaml's second front door, the HTTP API (parameter HttpApi): read from the
template itself, it serves exactly the REST API's routes, each to the same function, with
payload format 1.0, a permission for each function and a $default route, everything under
the HttpApiOn condition; and every function behind it checks the token itself."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from devstack import template

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = template.load()
RESOURCES: dict[str, Any] = DOCUMENT["Resources"]
CONDITION = "HttpApiOn"
API = "PodiumHttpApi"


def of_type(kind: str) -> dict[str, dict[str, Any]]:
    return {name: resource for name, resource in RESOURCES.items() if resource["Type"] == kind}


def tag(value: Any, name: str) -> Any:
    """The argument of an intrinsic function ``!<name>``, failing on anything else."""
    assert getattr(value, "tag", None) == name, value
    return value.value


def rest_routes() -> dict[tuple[str, str], str]:
    """(method, path) -> function, from the functions' ``Api`` events (the REST API)."""
    routes = {}
    for name, resource in of_type("AWS::Serverless::Function").items():
        for event in resource["Properties"].get("Events", {}).values():
            if event["Type"] == "Api":
                properties = event["Properties"]
                assert tag(properties["RestApiId"], "Ref") == "PodiumApi"
                routes[(str(properties["Method"]).upper(), str(properties["Path"]))] = name
    return routes


def integration_functions() -> dict[str, str]:
    """Integration -> the function it invokes."""
    found = {}
    for name, resource in of_type("AWS::ApiGatewayV2::Integration").items():
        properties = resource["Properties"]
        assert tag(properties["ApiId"], "Ref") == API
        assert properties["IntegrationType"] == "AWS_PROXY"
        # the REST proxy event's fields, which podium.http reads
        assert properties["PayloadFormatVersion"] == "1.0"
        function, attribute = str(tag(properties["IntegrationUri"], "GetAtt")).split(".")
        assert attribute == "Arn"
        found[name] = function
    return found


def http_routes() -> dict[str, str]:
    """Route key -> function, from the HTTP API's routes."""
    integrations = integration_functions()
    routes = {}
    for name, resource in of_type("AWS::ApiGatewayV2::Route").items():
        properties = resource["Properties"]
        assert tag(properties["ApiId"], "Ref") == API
        # no gateway authorizer: its 401 and 403 would be {"message"}, not the contract's shape
        assert properties.get("AuthorizationType", "NONE") == "NONE", name
        assert "AuthorizerId" not in properties, name
        target = re.fullmatch(r"integrations/\$\{(\w+)\}", str(tag(properties["Target"], "Sub")))
        assert target is not None, name
        key = str(properties["RouteKey"])
        assert key not in routes, f"{key} is routed twice"
        routes[key] = integrations[target.group(1)]
    return routes


def test_the_parameter_is_off_by_default_and_its_condition_reads_it() -> None:
    parameter = DOCUMENT["Parameters"]["HttpApi"]
    assert parameter["AllowedValues"] == ["off", "on"]
    assert parameter["Default"] == "off"
    assert parameter["Description"]
    left, right = tag(DOCUMENT["Conditions"][CONDITION], "Equals")
    assert (tag(left, "Ref"), right) == ("HttpApi", "on")


def test_the_http_api_serves_the_rest_apis_routes_each_to_the_same_function() -> None:
    # Given both doors' routes, read from the template
    rest = {f"{method} {path}": function for (method, path), function in rest_routes().items()}
    http = http_routes()

    # Then the HTTP API has every REST route and no other, each to the same function,
    # and its $default route goes to the page's function, which answers 404 NotFound
    default = http.pop("$default")
    assert http == rest
    assert default == "WebFunction"


def test_every_function_behind_the_http_api_has_one_permission_for_it() -> None:
    functions = set(http_routes().values())
    permitted = []
    for resource in of_type("AWS::Lambda::Permission").values():
        properties = resource["Properties"]
        source = str(tag(properties["SourceArn"], "Sub"))
        if "${" + API + "}" not in source:
            continue
        assert properties["Action"] == "lambda:InvokeFunction"
        assert properties["Principal"] == "apigateway.amazonaws.com"
        assert source.endswith(":${" + API + "}/*"), source  # every route and stage of it, only it
        permitted.append(tag(properties["FunctionName"], "Ref"))
    assert sorted(permitted) == sorted(functions)


def test_everything_of_the_http_api_is_under_its_condition() -> None:
    kinds = [f"AWS::ApiGatewayV2::{kind}" for kind in ("Api", "Stage", "Integration", "Route")]
    ours = [name for kind in kinds for name in of_type(kind)]
    ours += [
        name
        for name, resource in of_type("AWS::Lambda::Permission").items()
        if "${" + API + "}" in str(tag(resource["Properties"]["SourceArn"], "Sub"))
    ]
    assert len(ours) == 2 + 2 * len(set(http_routes().values())) + len(http_routes())
    assert {name: RESOURCES[name].get("Condition") for name in ours} == dict.fromkeys(ours, CONDITION)
    assert DOCUMENT["Outputs"]["HttpApiUrl"]["Condition"] == CONDITION
    assert tag(DOCUMENT["Outputs"]["HttpApiUrl"]["Value"], "GetAtt") == f"{API}.ApiEndpoint"


def test_the_stage_is_default_auto_deployed_and_throttled_as_the_rest_api() -> None:
    [stage] = of_type("AWS::ApiGatewayV2::Stage").values()
    properties = stage["Properties"]
    assert tag(properties["ApiId"], "Ref") == API
    assert (properties["StageName"], properties["AutoDeploy"]) == ("$default", True)
    [method_settings, *_] = RESOURCES["PodiumApi"]["Properties"]["MethodSettings"]
    for setting in ("ThrottlingBurstLimit", "ThrottlingRateLimit"):
        assert tag(properties["DefaultRouteSettings"][setting], "Ref") == tag(method_settings[setting], "Ref")
    assert RESOURCES[API]["Properties"]["ProtocolType"] == "HTTP"


@pytest.mark.parametrize("function", sorted(set(http_routes().values()) - {"WebFunction"}))
def test_every_api_function_checks_the_token_itself(function: str) -> None:
    # No edge authorizer runs on the HTTP API: each function asks podium.http.authorize,
    # which reads the token when no authorizer context came (podium.identity.caller_of)
    code = ROOT / RESOURCES[function]["Properties"]["CodeUri"] / "app.py"
    assert "http.authorize(app, Route." in code.read_text()


def test_the_local_http_door_serves_the_same_routes() -> None:
    # The local stack's router (--front-door http) reads the HTTP API's routes itself
    routes, default = template.read().http_api_routes()
    assert {f"{r.method} {r.path}": r.function for r in routes} == {
        key: function for key, function in http_routes().items() if key != "$default"
    }
    assert default is not None
    assert (default.path, default.function) == ("$default", "WebFunction")
    assert all(route.authorizer is None for route in routes)


def test_the_local_http_door_sends_payload_format_1_0() -> None:
    # Given the route of top, as the local HTTP door serves it
    from devstack import httpdoor

    routes, _ = template.read().http_api_routes()
    [top] = [route for route in routes if route.path == "/boards/{boardId}/top"]

    # When a request for it becomes an event
    event = httpdoor.event(
        top, "GET", "/boards/images/top", {"boardId": "images"}, "limit=3&limit=5",
        {"Authorization": "Bearer t", "Host": "abc.execute-api"}, b"", "10.0.0.1",
    )  # fmt: skip

    # Then it has the REST proxy event's fields as an HTTP API's payload format 1.0 fills
    # them: lower-case header names, the $default stage, no authorizer's context
    assert event["version"] == "1.0"
    assert (event["resource"], event["path"], event["httpMethod"]) == (top.path, "/boards/images/top", "GET")
    assert event["headers"] == {"authorization": "Bearer t", "host": "abc.execute-api"}
    assert event["queryStringParameters"] == {"limit": "3"}
    assert event["multiValueQueryStringParameters"] == {"limit": ["3", "5"]}
    assert event["pathParameters"] == {"boardId": "images"}
    context = event["requestContext"]
    assert context["authorizer"] == {"claims": None, "scopes": None}
    assert (context["stage"], context["path"]) == ("$default", event["path"])  # no stage in the path
    assert context["resourcePath"] == top.path
    assert context["identity"]["sourceIp"] == "10.0.0.1"
    assert (event["body"], event["isBase64Encoded"]) == (None, False)
