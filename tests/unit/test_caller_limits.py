"""Per-caller limits (template.yaml's CallerRateLimit): an AWS WAF web ACL on the REST API's
stage whose rate-based rules count each caller apart, its token (the Authorization header)
when it sends one, else its address. Off by default (its price: planner, docs/capacity.md).
The local stack does not emulate WAF; the wiring is what is checked here (and by cfn-lint)."""

from __future__ import annotations

import json
from typing import Any

from devstack import template
from devstack.template import _Tag

CONDITION = "CallerLimitsOn"


def resources() -> dict[str, Any]:
    found: dict[str, Any] = template.load()["Resources"]
    return found


def web_acl() -> dict[str, Any]:
    [acl] = [r for r in resources().values() if r["Type"] == "AWS::WAFv2::WebACL"]
    found: dict[str, Any] = acl
    return found


def rules() -> dict[str, dict[str, Any]]:
    return {rule["Name"]: rule for rule in web_acl()["Properties"]["Rules"]}


def test_the_limits_are_off_by_default_and_every_waf_resource_waits_for_the_switch() -> None:
    # Given the parameter and its condition
    document = template.load()
    parameter = document["Parameters"]["CallerRateLimit"]
    condition = document["Conditions"][CONDITION]

    # Then 0 is the default and means off, and every WAF resource is under the condition
    assert parameter["Default"] == 0
    assert parameter["MinValue"] == 0
    assert isinstance(condition, _Tag)
    assert condition.tag == "Not"
    assert repr(condition.value[0].value) == repr([_Tag("Ref", "CallerRateLimit"), "0"])
    waf = {name: r for name, r in resources().items() if r["Type"].startswith("AWS::WAFv2::")}
    assert set(waf) == {"CallerLimits", "CallerLimitsAssociation"}
    assert all(r.get("Condition") == CONDITION for r in waf.values())


def test_a_caller_with_a_token_is_counted_by_its_authorization_header() -> None:
    # Given the rule for callers that send a token
    rule = rules()["per-token"]
    statement = rule["Statement"]["RateBasedStatement"]

    # Then it counts requests by the Authorization header alone, over 5 minutes, at the
    # parameter's limit (a request without the header is not counted by it)
    assert statement["AggregateKeyType"] == "CUSTOM_KEYS"
    [key] = statement["CustomKeys"]
    assert key["Header"]["Name"].lower() == "authorization"
    assert key["Header"]["TextTransformations"] == [{"Priority": 0, "Type": "NONE"}]
    assert statement["EvaluationWindowSec"] == 300
    assert repr(statement["Limit"]) == repr(_Tag("Ref", "CallerRateLimit"))
    assert "ScopeDownStatement" not in statement


def test_a_caller_without_a_token_is_counted_by_its_address() -> None:
    # Given the rule for callers that send no token
    rule = rules()["per-address"]
    statement = rule["Statement"]["RateBasedStatement"]

    # Then it counts by source IP, and only requests without an Authorization header (a
    # header of any size matches the inner statement; NOT of it: no header)
    assert statement["AggregateKeyType"] == "IP"
    assert statement["EvaluationWindowSec"] == 300
    assert repr(statement["Limit"]) == repr(_Tag("Ref", "CallerRateLimit"))
    inner = statement["ScopeDownStatement"]["NotStatement"]["Statement"]["SizeConstraintStatement"]
    assert inner["FieldToMatch"]["SingleHeader"]["Name"].lower() == "authorization"
    assert inner["ComparisonOperator"] == "GE"
    assert inner["Size"] == 0


def test_a_caller_over_its_limit_gets_the_api_s_429_with_retry_after() -> None:
    # Given the web ACL: everything allowed but what a rule blocks
    acl = web_acl()["Properties"]
    assert acl["Scope"] == "REGIONAL"
    assert acl["DefaultAction"] == {"Allow": {}}
    bodies = acl["CustomResponseBodies"]

    # Then each rule blocks with 429, the API's error body (code Throttled) and Retry-After
    assert [rule["Priority"] for rule in acl["Rules"]] == [0, 1]
    for rule in acl["Rules"]:
        response = rule["Action"]["Block"]["CustomResponse"]
        assert response["ResponseCode"] == 429
        body = bodies[response["CustomResponseBodyKey"]]
        assert body["ContentType"] == "APPLICATION_JSON"
        assert json.loads(body["Content"])["code"] == "Throttled"
        headers = {h["Name"]: h["Value"] for h in response["ResponseHeaders"]}
        assert int(headers["Retry-After"]) > 0
        assert rule["VisibilityConfig"]["CloudWatchMetricsEnabled"] is True


def test_the_web_acl_is_associated_with_the_rest_api_s_stage() -> None:
    # Given the association
    association = resources()["CallerLimitsAssociation"]["Properties"]

    # Then it joins the web ACL to the REST API's stage (SAM's PodiumApi.Stage: the stage
    # resource SAM makes, so the association waits for it)
    assert repr(association["WebACLArn"]) == repr(_Tag("GetAtt", "CallerLimits.Arn"))
    arn = association["ResourceArn"]
    assert isinstance(arn, _Tag)
    assert arn.tag == "Sub"
    assert arn.value == (
        "arn:${AWS::Partition}:apigateway:${AWS::Region}::/restapis/${PodiumApi}/stages/${PodiumApi.Stage}"
    )
