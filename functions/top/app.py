"""GET /boards/{boardId}/top: the leaderboard, a page at a time."""

from podium import http, validation
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.get("/boards/<boardId>/top")
def top(boardId: str) -> Response:
    board_id = http.path_board(app, boardId)
    http.authorize(app, Route.TOP, board_id)
    params = http.query(app)
    limit = validation.query_int(params, "limit", 10, 1, validation.MAX_TOP_LIMIT)
    with_data = validation.query_bool(params, "withData")
    consistent = validation.query_bool(params, "consistent")  # skip the head: read the index
    page = services().reads.top(
        board_id, limit, params.get("cursor"), with_data, params.get("period"), consistent=consistent
    )
    return http.json_response(
        200,
        {
            "boardId": board_id,
            "entries": [entry.to_json() for entry in page.entries],
            "total": page.total,
            "nextCursor": page.next_cursor,
        },
    )


lambda_handler = http.entrypoint(app)
