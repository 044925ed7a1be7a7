"""GET / and GET /web/{asset}: the live leaderboard page and the files it loads, served by
the API itself, so that the page and the API share one origin (docs/web.md)."""

from pathlib import Path

from podium import http, webfiles
from podium.http import Response

app = http.create_app()
HERE = Path(__file__).resolve().parent
site = webfiles.Site(HERE / "page.html", HERE / "assets")


@app.get("/")
def page() -> Response:
    event = app.current_event
    return site.index(event.raw_event.get("requestContext"), event.query_string_parameters)


@app.get("/web/<asset>")
def asset(asset: str) -> Response:
    return site.asset(asset)


lambda_handler = http.entrypoint(app)
