"""GET /boards/{boardId}/members/{memberId}/rank: one member's position."""

from podium import http, validation
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.get("/boards/<boardId>/members/<memberId>/rank")
def rank(boardId: str, memberId: str) -> Response:
    board_id, member_id = http.path_board_and_member(app, boardId, memberId)
    who = http.authorize(app, Route.RANK, board_id)
    params = http.query(app)
    consistent = validation.query_bool(params, "consistent")  # count the index, not the tree
    # Whether a member is hidden is told to admins only: to others it is as one not there.
    answer = services().reads.rank(
        board_id, member_id, params.get("period"), consistent=consistent, reveal_hidden=who.is_admin
    )
    return http.json_response(200, answer)


lambda_handler = http.entrypoint(app)
