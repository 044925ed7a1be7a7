"""The per-caller limits (template.yaml's CallerRateLimit: an AWS WAF web ACL on the REST
API's stage) in the planner's bill, checked against the arithmetic done by hand."""

from __future__ import annotations

import json

import pytest

from planner import bill, capacity
from planner.__main__ import main
from planner.capacity import Prices, Workload, plan

# The reference workload: 5,000 updates and 20,000 reads a second (a fifth of them
# ranks) on 1,000,000 members, top pages of 100: 25,000 requests a second.
REFERENCE = Workload(
    writes_per_s=5_000, top_reads_per_s=16_000, rank_reads_per_s=4_000, members=1_000_000, k=100
)


def test_the_list_prices_are_us_east_1_s() -> None:
    prices = Prices()
    assert prices.waf_web_acl_per_month == 5.00
    assert prices.waf_rule_per_month == 1.00
    assert prices.waf_per_million_requests == 0.60
    assert bill.CALLER_LIMIT_RULES == 2  # a rule keyed on the token, one on the address


def test_the_caller_limits_at_the_reference_workload() -> None:
    # Given 25,000 requests a second for a month of 730 hours: 65,700 million requests
    result = bill.bill(REFERENCE, plan(REFERENCE))
    assert result.requests_per_month == 65_700e6

    # Then the web ACL costs $5, its two rules $2, and every request it inspects $0.60 a
    # million: $39,420, $39,427 in all, a month
    assert result.caller_limits_monthly == pytest.approx(5 + 2 * 1 + 65_700 * 0.60)
    assert result.caller_limits_monthly == pytest.approx(39_427.00)
    # which is a third of the REST API's own price at this volume, and not in the totals
    assert 0.3 < result.caller_limits_monthly / result.front("REST API").monthly < 0.35
    assert result.total("REST API") == pytest.approx(
        result.front("REST API").monthly
        + result.lambda_monthly
        + result.egress_monthly
        + result.dynamodb_on_demand
    )


def test_the_caller_limits_of_a_small_game() -> None:
    # Given 10 requests a second: 26.28 million a month
    small = Workload(writes_per_s=2, top_reads_per_s=6, rank_reads_per_s=2, members=10_000)
    result = bill.bill(small, plan(small))

    # Then $7 of web ACL and rules, and 26.28 x $0.60 = $15.77 of requests: $22.77
    assert result.caller_limits_monthly == pytest.approx(7 + 26.28 * 0.60)
    assert round(result.caller_limits_monthly, 2) == 22.77


def test_the_waf_prices_can_be_overridden() -> None:
    # Given another region's prices: $6 a web ACL, $1.20 a rule, $0.72 a million requests
    prices = Prices(waf_web_acl_per_month=6.0, waf_rule_per_month=1.2, waf_per_million_requests=0.72)
    small = Workload(writes_per_s=2, top_reads_per_s=6, rank_reads_per_s=2, members=10_000)

    # Then 6 + 2 x 1.20 + 26.28 x 0.72 = $27.32
    result = bill.bill(small, plan(small, prices), prices)
    assert result.caller_limits_monthly == pytest.approx(6 + 2.4 + 26.28 * 0.72)


def test_the_cli_prints_the_caller_limits_and_takes_their_prices(capsys: pytest.CaptureFixture[str]) -> None:
    # When the reference plan is printed as a table, and as JSON with the request price doubled
    args = ["--writes", "5000", "--reads", "20000", "--members", "1000000", "--k", "100"]
    assert main(args) == 0
    table = capsys.readouterr().out
    assert main([*args, "--price-waf-requests", "1.20", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)

    # Then the table names the WAF and its price, and the JSON takes the price given
    assert "caller limits (WAF" in table
    assert "$39,427.00 a month" in table
    assert document["bill"]["caller_limits_monthly"] == pytest.approx(7 + 65_700 * 1.20)
    assert document["prices"]["waf_per_million_requests"] == 1.20
    assert capacity.PRICE_REGION == "us-east-1"
