"""PUT /boards/{boardId}: create a board, or confirm an existing one."""

from podium import http, validation
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.put("/boards/<boardId>")
def create_board(boardId: str) -> Response:
    board_id = http.path_board(app, boardId)
    http.authorize(app, Route.CREATE_BOARD)
    request = validation.board_request(http.body(app), own_id=board_id)
    board, created = services().boards.put_board(board_id, request)
    return http.json_response(201 if created else 200, board.to_json())


lambda_handler = http.entrypoint(app)
