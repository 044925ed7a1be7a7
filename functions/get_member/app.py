"""GET /boards/{boardId}/members/{memberId}: one member; ``fresh=true`` adds the events
logged since the last fold."""

from podium import http, validation
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.get("/boards/<boardId>/members/<memberId>")
def get_member(boardId: str, memberId: str) -> Response:
    board_id, member_id = http.path_board_and_member(app, boardId, memberId)
    admin = http.authorize(app, Route.GET_MEMBER).is_admin  # only admins' answers carry hidden
    params = http.query(app)
    period = params.get("period")
    if validation.query_bool(params, "fresh"):
        member, pending = services().members.fresh_member(board_id, member_id, period)
        return http.json_response(200, {**member.to_json(admin), "pendingEvents": pending})
    return http.json_response(200, services().members.get_member(board_id, member_id, period).to_json(admin))


lambda_handler = http.entrypoint(app)
