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
    limit = validation.page_limit(params, "top")
    with_data = validation.query_bool(params, "withData")
    consistent = validation.query_bool(params, "consistent")  # skip the head: read the index
    page = services().reads.top(
        board_id, limit, params.get("cursor"), with_data, params.get("period"), consistent=consistent
    )
    return http.page_response(board_id, page)


lambda_handler = http.entrypoint(app)
