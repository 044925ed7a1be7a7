"""GET /boards/{boardId}: one board."""

from podium import http
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.get("/boards/<boardId>")
def get_board(boardId: str) -> Response:
    board_id = http.path_board(app, boardId)
    http.authorize(app, Route.GET_BOARD, board_id)
    board = services().boards.get_board(board_id)
    return http.json_response(200, board.to_json())


lambda_handler = http.entrypoint(app)
