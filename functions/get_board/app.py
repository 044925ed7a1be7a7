"""GET /boards/{boardId}: one board."""

from podium import http
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.get("/boards/<boardId>")
def get_board(boardId: str) -> Response:
    board = services().boards.get_board(http.path_board(app, boardId))
    return http.json_response(200, board.to_json())


lambda_handler = http.entrypoint(app)
