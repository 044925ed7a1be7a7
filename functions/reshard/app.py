"""POST /boards/{boardId}/reshard: move the board to another shard count, live (202)."""

from podium import http, validation
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.post("/boards/<boardId>/reshard")
def reshard(boardId: str) -> Response:
    board_id = http.path_board(app, boardId)
    http.authorize(app, Route.RESHARD, board_id)
    shards = validation.reshard_shards(http.body(app, required=True))
    board = services().resharding.start(board_id, shards)
    return http.json_response(202, board.to_json())


lambda_handler = http.entrypoint(app)
