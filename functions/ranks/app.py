"""POST /boards/{boardId}/ranks: several members' board-wide ranks (a friends leaderboard)."""

from podium import http, validation
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.post("/boards/<boardId>/ranks")
def ranks(boardId: str) -> Response:
    board_id = http.path_board(app, boardId)
    http.authorize(app, Route.RANKS, board_id)
    member_ids = validation.member_ids(http.body(app, required=True))
    entries = services().reads.ranks(board_id, member_ids, http.query(app).get("period"))
    return http.json_response(200, {"entries": [entry.to_json() for entry in entries]})


lambda_handler = http.entrypoint(app)
