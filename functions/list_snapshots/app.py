"""GET /boards/{boardId}/snapshots: the board's scheduled snapshots, newest first."""

from podium import http, validation
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.get("/boards/<boardId>/snapshots")
def list_snapshots(boardId: str) -> Response:
    board_id = http.path_board(app, boardId)
    http.authorize(app, Route.SNAPSHOTS, board_id)
    params = http.query(app)
    limit = validation.page_limit(params, "snapshots")
    found, next_cursor = services().snapshots.list(board_id, limit, params.get("cursor"))
    return http.json_response(200, {"snapshots": [s.to_json() for s in found], "nextCursor": next_cursor})


lambda_handler = http.entrypoint(app)
