"""docs/openapi.yaml is the API's machine-readable contract: a valid OpenAPI 3 document whose
operations are exactly the routes template.yaml deploys, that the examples of README.md and
docs/api.md follow, and whose Error codes cover every error the layer answers with."""

from __future__ import annotations

import inspect
import json
import re
import shlex
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import openapi_spec_validator
import pytest
import yaml
from openapi_schema_validator import OAS30Validator

from devstack import template
from podium import errors

ROOT = Path(__file__).resolve().parents[2]
OPENAPI = ROOT / "docs" / "openapi.yaml"
README = ROOT / "README.md"
API_GUIDE = ROOT / "docs" / "api.md"
# Routes of the local stack alone (POST /_local/token): not of the deployed API, nor of the document.
LOCAL_ONLY = "/_local/"
HTTP_METHODS = ("get", "put", "post", "delete", "patch", "head", "options")

# The contract's table of errors: each code and the status it comes with.
STATUS_OF_CODE = {
    "ValidationError": 400,
    "Unauthorized": 401,
    "Forbidden": 403,
    "NotFound": 404,
    "Conflict": 409,
    "PayloadTooLarge": 413,
    "Throttled": 429,
    "RateLimited": 429,
    "InternalError": 500,
}
# The read routes that answer without a token on a board whose publicRead is true.
PUBLIC_READS = {"getBoard", "getTop", "getRank", "getAround", "getRanks", "getScores", "listSnapshots"}
# The live leaderboard page and its files (functions/web): no token, no parameter to refuse.
PAGE = {"getPage", "getPageAsset"}
# Answers that are not errors: successes, the page's redirect to its trailing slash, and a
# conditional GET's "not modified".
NOT_ERRORS = {200, 201, 202, 204, 301, 304}


@cache
def openapi() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(OPENAPI.read_text(encoding="utf-8"))
    return document


def resolved(node: dict[str, Any]) -> dict[str, Any]:
    """``node``, or what its local ``$ref`` points at (a parameter, a response, a schema)."""
    while "$ref" in node:
        reference = node["$ref"]
        assert reference.startswith("#/"), f"only local references are expected: {reference}"
        target: Any = openapi()
        for part in reference[2:].split("/"):
            target = target[part.replace("~1", "/").replace("~0", "~")]
        node = target
    return node


def validator(schema: dict[str, Any]) -> OAS30Validator:
    """A validator of ``schema`` whose ``#/components/...`` references resolve in the document
    (a root ``$ref`` hides its sibling keywords, so carrying the components along is harmless).
    No format checker: the docs elide timestamps and ids as "...", and they are opaque here."""
    return OAS30Validator({**schema, "components": openapi()["components"]})


def schema_errors(schema: dict[str, Any], value: Any) -> list[str]:
    return [
        f"{'/'.join(map(str, error.absolute_path)) or '(body)'}: {error.message}"
        for error in validator(schema).iter_errors(value)
    ]


@dataclass(frozen=True)
class Operation:
    method: str
    path: str
    spec: dict[str, Any]
    parameters: dict[tuple[str, str], dict[str, Any]]  # (in, name) -> the parameter, resolved

    @property
    def operation_id(self) -> str:
        return str(self.spec.get("operationId", ""))

    def response(self, status: int) -> dict[str, Any] | None:
        found = self.spec["responses"].get(str(status))
        return resolved(found) if found is not None else None

    def success_schemas(self) -> list[dict[str, Any]]:
        return [
            resolved(response)["content"]["application/json"]["schema"]
            for status, response in self.spec["responses"].items()
            if str(status).startswith("2") and "application/json" in resolved(response).get("content", {})
        ]

    def request_schema(self) -> dict[str, Any] | None:
        body = self.spec.get("requestBody")
        if body is None:
            return None
        schema: dict[str, Any] = resolved(body)["content"]["application/json"]["schema"]
        return schema


def operations() -> list[Operation]:
    found = []
    for path, item in openapi()["paths"].items():
        shared = [resolved(parameter) for parameter in item.get("parameters", [])]
        for method, spec in item.items():
            if method not in HTTP_METHODS:
                continue
            own = [resolved(parameter) for parameter in spec.get("parameters", [])]
            parameters = {(p["in"], p["name"]): p for p in [*shared, *own]}
            found.append(Operation(method.upper(), path, spec, parameters))
    return found


def test_the_document_is_valid_openapi_3() -> None:
    # Given the document as a user's tools load it
    document = openapi()

    # When it is checked against the OpenAPI specification (this raises on the first fault)
    openapi_spec_validator.validate(document)

    # Then it is a 3.0 document, the version API Gateway imports
    assert document["openapi"] == "3.0.3"


def test_every_route_of_the_template_is_an_operation_and_the_other_way_round() -> None:
    # Given the routes that template.yaml deploys, read as the local stack reads them
    routed = {(route.method, route.path) for route in template.read().routes()}

    # When the document's operations are listed
    documented = {(operation.method, operation.path) for operation in operations()}

    # Then neither has a route that the other lacks
    assert routed - documented == set(), "routed in template.yaml, missing from docs/openapi.yaml"
    assert documented - routed == set(), "in docs/openapi.yaml, not routed in template.yaml"


def test_every_operation_is_named_summarised_and_answers_the_errors_of_its_route() -> None:
    # Given every operation of the document
    documented = operations()

    # When their names and error responses are collected
    names = [operation.operation_id for operation in documented]

    # Then each has a unique operationId and a summary
    assert all(names), names
    assert len(set(names)) == len(names), names
    assert all(operation.spec.get("summary") for operation in documented)
    for operation in documented:
        statuses = {int(status) for status in operation.spec["responses"]}
        where = f"{operation.method} {operation.path}"
        # every route can get a bad parameter, no token, a throttled database or a fault
        # (the page's routes take neither a token nor a parameter they could refuse)
        needed = {429, 500} if operation.operation_id in PAGE else {400, 401, 429, 500}
        assert needed <= statuses, where
        # a route of one board answers 404 for a board that does not exist (but the one
        # that creates the board)
        of_a_board = "{boardId}" in operation.path and operation.operation_id != "createBoard"
        assert not of_a_board or 404 in statuses, where
        # a route that takes a body answers 413 for one over 256 KiB
        assert operation.request_schema() is None or 413 in statuses, where
        for status in statuses - NOT_ERRORS:
            error = operation.response(status)
            assert error is not None
            assert error["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Error"}


def test_a_rate_limited_submission_says_when_to_retry() -> None:
    # Given the score submission, the one route that a board's limits rate-limit
    submit = next(operation for operation in operations() if operation.operation_id == "submitScore")

    # When its 429 is read
    too_many = submit.response(429)

    # Then it carries Retry-After in whole seconds
    assert too_many is not None
    assert too_many["headers"]["Retry-After"]["schema"]["type"] == "integer"


def test_bodies_refuse_unknown_fields_as_the_service_does() -> None:
    # Given the request bodies of every operation
    bodies = {op.operation_id: op.request_schema() for op in operations() if op.request_schema()}

    # When each is given a field that the contract does not have
    refusals = {name: schema_errors(schema, {"colour": "red"}) for name, schema in bodies.items() if schema}

    # Then each refuses it
    assert bodies, "some operations take a body"
    assert all(refusals.values()), [name for name, found in refusals.items() if not found]


def test_only_the_read_routes_of_a_public_board_answer_without_a_token() -> None:
    # Given the document's default security (a bearer JWT)
    assert openapi()["security"] == [{"bearerAuth": []}]
    assert openapi()["components"]["securitySchemes"]["bearerAuth"]["scheme"] == "bearer"

    # When the operations that also accept no token are listed
    anonymous = {op.operation_id for op in operations() if {} in op.spec.get("security", [])}

    # Then they are the board's reads that publicRead opens, and nothing else
    assert anonymous == PUBLIC_READS


def test_the_page_needs_no_token_in_the_document_nor_in_the_template() -> None:
    # Given the page's operations, and the routes of template.yaml
    page = [op for op in operations() if op.operation_id in PAGE]
    routes = {(route.method, route.path): route for route in template.read().routes()}

    # Then the document asks no token for them (an empty security list), and API Gateway
    # calls no authorizer for them
    assert {op.operation_id for op in page} == PAGE
    for operation in page:
        assert operation.spec["security"] == [], operation.operation_id
        assert routes[(operation.method, operation.path)].authorizer is None, operation.path


def test_every_get_documents_its_validators_and_the_304_they_earn() -> None:
    # Given every GET of the document (podium.http makes each 200 of a GET conditional)
    gets = [operation for operation in operations() if operation.method == "GET"]

    # Then each takes If-None-Match, its 200 names ETag and Cache-Control, and it lists the
    # 304 with no body
    assert len(gets) >= 10
    for operation in gets:
        where = operation.operation_id
        assert ("header", "If-None-Match") in operation.parameters, where
        ok = operation.response(200)
        assert ok is not None, where
        assert {"ETag", "Cache-Control"} <= set(ok["headers"]), where
        not_modified = operation.response(304)
        assert not_modified is not None, where
        assert "content" not in not_modified, where
        assert "ETag" in not_modified["headers"], where


def test_every_error_code_of_the_layer_is_in_the_error_schema() -> None:
    # Given the errors the layer answers with, and the status of each
    answered = {
        error.code: error.status
        for error in vars(errors).values()
        if inspect.isclass(error) and issubclass(error, errors.PodiumError)
    }

    # When the Error schema's codes are read
    codes = set(openapi()["components"]["schemas"]["Error"]["properties"]["code"]["enum"])

    # Then every code is there, with the status the contract gives it
    assert set(answered) <= codes, set(answered) - codes
    assert codes == set(STATUS_OF_CODE)
    assert answered == {code: STATUS_OF_CODE[code] for code in answered}


# -- the examples of README.md and docs/api.md ---------------------------------------------------------------

# curl's options that take a value; the ones the contract check ignores (headers such as
# Authorization or Idempotency-Key, output files) are skipped with their value.
METHOD_OPTIONS = ("-X", "--request")
DATA_OPTIONS = ("-d", "--data", "--data-raw", "--data-binary")
IGNORED_OPTIONS_WITH_A_VALUE = (
    "-H",
    "--header",
    "-o",
    "--output",
    "-w",
    "--write-out",
    "-u",
    "--user",
    "-m",
    "--max-time",
    "--connect-timeout",
    "-A",
    "--user-agent",
)
SHELL_OPERATORS = {";", "&&", "||", "|", "&", "(", ")"}
SHELL_KEYWORDS = {"do", "then", "else", "time", "!"}
# The base of the URL: "$API", "${API}", "http://host:port" or "localhost:3000".
# How the docs spell the API's base URL: $API, or the local stack's host and port.
API_URL = re.compile(r"^(?:\$\{?API\}?|(?:https?://)?(?:localhost|127\.0\.0\.1):\d+)(?:/|$)")
BASE_URL = re.compile(r"^(?:\$\{?\w+\}?|https?://[^/]+|[\w.-]+:\d+)")
# A value the example computes in the shell (a loop variable, "${image##*:}"): "0" stands for
# it, which is valid both in an id and as a JSON number.
SHELL_EXPANSION = re.compile(r"\$\{[^}]*\}|\$\w+")
# The docs elide list items with ", ..." inside their JSON.
ELIDED_ITEMS = re.compile(r",\s*\.\.\.(?=\s*[\]}])")


@dataclass(frozen=True)
class Example:
    source: str  # the file, relative to the repository
    line: int  # the line of the curl, for the failure message
    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    body: Any  # the JSON of -d; None without one
    response: Any  # the JSON shown in the comment right under the request; None without one

    def __str__(self) -> str:
        return f"{self.source}:{self.line} {self.method} {self.path}"


def fenced_blocks(text: str) -> list[list[tuple[int, str]]]:
    """The lines of every fenced code block, each with its line number in the file."""
    blocks: list[list[tuple[int, str]]] = []
    current: list[tuple[int, str]] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("```"):
            if current is None:
                current = []
            else:
                blocks.append(current)
                current = None
        elif current is not None:
            current.append((number, line))
    return blocks


def logical_lines(block: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The block's lines with the shell's continuations ("\\" at the end) joined."""
    joined: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in block:
        start, text = pending if pending else (number, "")
        text += line
        if line.endswith("\\"):
            pending = (start, text[:-1] + " ")
            continue
        pending = None
        joined.append((start, text))
    return joined


def shell_commands(line: str) -> list[list[str]]:
    """The words of each simple command on a line, without operators, redirections and the
    trailing comment."""
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    commands: list[list[str]] = [[]]
    tokens = list(lexer)
    index = 0
    while index < len(tokens):
        token = tokens[index]
        if token in SHELL_OPERATORS:
            commands.append([])
        elif set(token) <= set("<>&") and ("<" in token or ">" in token):
            index += 1  # a redirection and its target ("> /dev/null")
            if commands[-1] and commands[-1][-1].isdigit():
                commands[-1].pop()  # the descriptor it redirects ("2>/dev/null")
        else:
            commands[-1].append(token)
        index += 1
    stripped = []
    for words in commands:
        while words and words[0] in SHELL_KEYWORDS:
            words = words[1:]
        if words:
            stripped.append(words)
    return stripped


def curl_request(words: list[str]) -> tuple[str, str, str | None]:
    """The method, the URL and the body of a curl command."""
    method: str | None = None
    body: str | None = None
    url = ""
    arguments = iter(words[1:])
    for argument in arguments:
        if argument in METHOD_OPTIONS:
            method = next(arguments)
        elif argument.startswith("-X") and len(argument) > 2:
            method = argument[2:]
        elif argument in DATA_OPTIONS:
            body = next(arguments)
        elif argument in IGNORED_OPTIONS_WITH_A_VALUE:
            next(arguments)
        elif argument.startswith("-"):
            continue  # a flag: -s, -i, -f
        else:
            url = argument
    return (method or ("POST" if body is not None else "GET")).upper(), url, body


def shown_response(source: str, lines: list[tuple[int, str]], after: int) -> Any:
    """The JSON in the comment lines right under line ``after`` of a block, or None."""
    comment = []
    for _, line in lines[after + 1 :]:
        if not line.lstrip().startswith("#"):
            break
        comment.append(line.lstrip()[1:].strip())
    if not comment or not comment[0].startswith(("{", "[")):
        return None
    text = ELIDED_ITEMS.sub("", " ".join(comment))
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise AssertionError(
            f"{source}: the response under line {lines[after][0]} is not JSON: {text}"
        ) from error


def examples_of(markdown: Path) -> list[Example]:
    """The curl requests in the file's code blocks, each with the response shown under it."""
    source = str(markdown.relative_to(ROOT))
    examples = []
    for block in fenced_blocks(markdown.read_text(encoding="utf-8")):
        lines = logical_lines(block)
        for position, (number, line) in enumerate(lines):
            if line.lstrip().startswith("#"):
                continue
            # the API's requests: a curl to another service (Cognito's token endpoint) is not
            curls = [
                words
                for words in shell_commands(line)
                if words[0] == "curl" and API_URL.match(curl_request(words)[1])
            ]
            for index, words in enumerate(curls):
                method, url, raw_body = curl_request(words)
                target = urlsplit("http://base" + SHELL_EXPANSION.sub("0", BASE_URL.sub("", url)))
                body = json.loads(SHELL_EXPANSION.sub("0", raw_body)) if raw_body is not None else None
                # A response shown under a line belongs to its last request.
                response = shown_response(source, lines, position) if index == len(curls) - 1 else None
                query = tuple(parse_qsl(target.query, keep_blank_values=True))
                if not target.path.startswith(LOCAL_ONLY):
                    examples.append(Example(source, number, method, target.path, query, body, response))
    return examples


def operation_for(example: Example) -> tuple[Operation, dict[str, str]]:
    """The operation that serves the example's request, and its path's parameters."""
    for operation in operations():
        template_path = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(operation.path))
        found = re.fullmatch(template_path, example.path)
        if found and operation.method == example.method:
            return operation, found.groupdict()
    raise AssertionError(f"{example}: no such operation in docs/openapi.yaml")


def query_value(raw: str, schema: dict[str, Any]) -> Any:
    """A query string's value as the type its schema says (a query string is text)."""
    if schema.get("type") == "integer" and re.fullmatch(r"-?\d+", raw):
        return int(raw)
    if schema.get("type") == "boolean" and raw in ("true", "false"):
        return raw == "true"
    if schema.get("type") == "number" and re.fullmatch(r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?", raw):
        return Decimal(raw)  # exactly, as the service reads a score in the query
    return raw


EXAMPLES = examples_of(README) + examples_of(API_GUIDE)
RESPONSES = [example for example in EXAMPLES if example.response is not None]


@pytest.mark.parametrize("markdown", [README, API_GUIDE], ids=lambda path: path.name)
def test_the_docs_have_examples_to_check(markdown: Path) -> None:
    # Given a file's examples, as the parser finds them
    found = examples_of(markdown)

    # When they are counted
    methods = {example.method for example in found}
    responses = [example for example in found if example.response is not None]

    # Then the parser found requests of every kind and some responses (a parser that finds
    # nothing would pass every check below)
    assert len(found) >= 10, [str(example) for example in found]
    assert methods == {"GET", "PUT", "POST", "DELETE"}
    assert len(responses) >= 5


@pytest.mark.parametrize("example", EXAMPLES, ids=str)
def test_documented_request_is_an_operation_of_the_document(example: Example) -> None:
    # Given a request that README.md or docs/api.md shows
    # When the document's operation for it is found
    operation, path_parameters = operation_for(example)

    # Then its path ids, its query parameters and its body are ones the operation takes
    for name, value in path_parameters.items():
        schema = operation.parameters[("path", name)]["schema"]
        assert schema_errors(schema, value) == [], f"{example}: {name}"
    for name, raw in example.query:
        assert ("query", name) in operation.parameters, f"{example}: no query parameter {name}"
        schema = operation.parameters[("query", name)]["schema"]
        assert schema_errors(schema, query_value(raw, schema)) == [], f"{example}: {name}={raw}"
    request_schema = operation.request_schema()
    if example.body is not None:
        assert request_schema is not None, f"{example}: the operation takes no body"
    shows_an_error = isinstance(example.response, dict) and "code" in example.response
    if request_schema is not None and not shows_an_error:  # bad input is shown on purpose
        assert example.body is not None or not operation.spec["requestBody"].get("required"), str(example)
        assert schema_errors(request_schema, example.body or {}) == [], str(example)


@pytest.mark.parametrize("example", RESPONSES, ids=str)
def test_documented_response_is_one_the_operation_gives(example: Example) -> None:
    # Given a response that README.md or docs/api.md shows right under its request
    operation, _ = operation_for(example)

    # When it is checked against the operation's responses
    if isinstance(example.response, dict) and "code" in example.response:
        status = STATUS_OF_CODE.get(example.response["code"], 0)
        documented = operation.response(status)
        assert documented is not None, f"{example}: the operation does not answer {status}"
        found = [schema_errors(documented["content"]["application/json"]["schema"], example.response)]
    else:
        found = [schema_errors(schema, example.response) for schema in operation.success_schemas()]

    # Then one of them describes it
    assert [] in found, f"{example}: {found}"
