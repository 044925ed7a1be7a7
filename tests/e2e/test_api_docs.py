"""The API docs in the browser, over HTTP: ``GET /docs`` on a local stack that checks tokens
(as ``make run`` does) is Swagger UI, every asset the page loads is served from the stack
itself with its type, and the document it shows is docs/openapi.yaml with this stack as
its only server, so that "Try it out" with a token from Authorize reaches this stack."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
import requests
import yaml

from tests.messaging import LocalStack

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 30
# The type a browser needs for each kind of asset: a stylesheet served as text/plain is
# ignored, and a script under `X-Content-Type-Options: nosniff` needs a JavaScript type.
EXPECTED_TYPES = {".css": "text/css", ".js": "text/javascript", ".png": "image/png"}


class References(HTMLParser):
    """Every URL the page loads by itself: scripts, stylesheets, icons."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "script" and found.get("src"):
            self.urls.append(str(found["src"]))
        elif tag == "link" and found.get("href"):
            self.urls.append(str(found["href"]))


def media_type(response: requests.Response) -> str:
    return response.headers.get("Content-Type", "").split(";")[0].strip()


@pytest.fixture(scope="module")
def docs_page(auth_stack: LocalStack) -> requests.Response:
    return requests.get(f"{auth_stack.url}/docs", timeout=TIMEOUT)


def test_docs_is_a_swagger_ui_page_that_says_how_to_get_a_token(docs_page: requests.Response) -> None:
    # Given a local stack that checks tokens
    # When a browser opens /docs
    # Then it gets an HTML page that starts Swagger UI on the stack's own document
    assert docs_page.status_code == 200
    assert media_type(docs_page) == "text/html"
    assert "SwaggerUIBundle" in docs_page.text
    assert '"/docs/openapi.yaml"' in docs_page.text
    # and tells where the token for Authorize comes from
    assert "make token ROLE=admin" in docs_page.text


def test_every_asset_the_page_loads_comes_from_the_stack_with_its_type(
    auth_stack: LocalStack, docs_page: requests.Response
) -> None:
    # Given the page's scripts, stylesheets and icons
    page = References()
    page.feed(docs_page.text)
    urls = [urljoin(f"{auth_stack.url}/docs", url) for url in page.urls]
    # Then Swagger UI's bundle and stylesheet are among them, each on this stack (no CDN:
    # the page works offline)
    names = {Path(urlsplit(url).path).name for url in urls}
    assert {"swagger-ui-bundle.js", "swagger-ui.css"} <= names
    assert {urlsplit(url).netloc for url in urls} == {urlsplit(auth_stack.url).netloc}
    # and each answers 200 with the type its kind needs, and the package's content
    for url in urls:
        response = requests.get(url, timeout=TIMEOUT)
        assert response.status_code == 200, url
        assert media_type(response) == EXPECTED_TYPES[Path(urlsplit(url).path).suffix], url
        packaged = ROOT / "node_modules" / "swagger-ui-dist" / Path(urlsplit(url).path).name
        assert response.content == packaged.read_bytes(), url


def test_the_served_document_is_the_repositorys_with_this_stack_as_its_server(auth_stack: LocalStack) -> None:
    # Given the repository's contract
    written: dict[str, Any] = yaml.safe_load((ROOT / "docs" / "openapi.yaml").read_text(encoding="utf-8"))
    # When the page fetches the document
    response = requests.get(f"{auth_stack.url}/docs/openapi.yaml", timeout=TIMEOUT)
    # Then it is YAML that says the same in every part but servers
    assert response.status_code == 200
    assert media_type(response) == "application/yaml"
    served: dict[str, Any] = yaml.safe_load(response.text)
    assert {k: v for k, v in served.items() if k != "servers"} == {
        k: v for k, v in written.items() if k != "servers"
    }
    # and its one server is the stack the browser reached
    assert [server["url"] for server in served["servers"]] == [auth_stack.url]
    # and Authorize offers the bearer scheme every operation names
    bearer = served["components"]["securitySchemes"]["bearerAuth"]
    assert (bearer["type"], bearer["scheme"]) == ("http", "bearer")


def test_try_it_out_with_an_authorized_token_reaches_the_stack(auth_stack: LocalStack) -> None:
    # Given the document's server, and a token as `make token ROLE=admin` prints it
    served = yaml.safe_load(requests.get(f"{auth_stack.url}/docs/openapi.yaml", timeout=TIMEOUT).text)
    server = served["servers"][0]["url"]
    minted = requests.post(f"{auth_stack.url}/_local/token", json={"role": "admin"}, timeout=TIMEOUT)
    token = minted.json()["token"]
    # When Swagger UI sends an operation as it does after Authorize (Authorization: Bearer)
    # and before it (no header)
    bearer = {"Authorization": f"Bearer {token}"}
    authorized = requests.get(f"{server}/boards", headers=bearer, timeout=TIMEOUT)
    anonymous = requests.get(f"{server}/boards", timeout=TIMEOUT)
    # Then the authorized one is answered and the other refused, as the document says
    assert authorized.status_code == 200, authorized.text
    assert "boards" in authorized.json()
    assert anonymous.status_code == 401


def test_the_document_names_the_host_the_browser_used(auth_stack: LocalStack) -> None:
    # Given a browser that reached the stack as localhost (another origin than 127.0.0.1)
    port = urlsplit(auth_stack.url).port
    # When it fetches the document
    response = requests.get(
        f"{auth_stack.url}/docs/openapi.yaml", headers={"Host": f"localhost:{port}"}, timeout=TIMEOUT
    )
    # Then "Try it out" sends to that same origin
    assert [server["url"] for server in yaml.safe_load(response.text)["servers"]] == [
        f"http://localhost:{port}"
    ]


@pytest.mark.parametrize("path", ["/docs/assets/package.json", "/docs/assets/index.html", "/docs/nothing"])
def test_nothing_else_is_served_under_docs(auth_stack: LocalStack, path: str) -> None:
    # Given a path under /docs that is not one of the page's
    # When it is asked for
    response = requests.get(f"{auth_stack.url}{path}", timeout=TIMEOUT)
    # Then it is not found: only the assets the page loads leave node_modules
    assert response.status_code == 404
