"""GET /boards/{boardId}/members/{memberId}/around: the entries around a member."""

from podium import http, validation
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.get("/boards/<boardId>/members/<memberId>/around")
def around(boardId: str, memberId: str) -> Response:
    board_id, member_id = http.path_board_and_member(app, boardId, memberId)
    who = http.authorize(app, Route.AROUND, board_id)
    params = http.query(app)
    radius = validation.query_int(params, "radius", validation.DEFAULT_RADIUS, 0, validation.MAX_RADIUS)
    # Whether a member is hidden is told to admins only: to others it is as one not there.
    page = services().reads.around(board_id, member_id, radius, params.get("period"), who.is_admin)
    return http.json_response(
        200,
        {"boardId": board_id, "entries": [entry.to_json() for entry in page.entries], "total": page.total},
    )


lambda_handler = http.entrypoint(app)
