"""GET /boards: every board, a page at a time."""

from podium import http, validation
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.get("/boards")
def list_boards() -> Response:
    http.authorize(app, Route.LIST_BOARDS)
    params = http.query(app)
    limit = validation.page_limit(params, "boards")
    page = services().boards.list_boards(limit, params.get("cursor"))
    return http.json_response(
        200, {"boards": [board.to_json() for board in page.boards], "nextCursor": page.next_cursor}
    )


lambda_handler = http.entrypoint(app)
