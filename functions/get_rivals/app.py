"""GET /boards/{boardId}/members/{memberId}/rivals: the members this member follows."""

from podium import http
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.get("/boards/<boardId>/members/<memberId>/rivals")
def get_rivals(boardId: str, memberId: str) -> Response:
    board_id, member_id = http.path_board_and_member(app, boardId, memberId)
    http.authorize(app, Route.GET_RIVALS, members=[member_id])
    rivals = services().social.get_rivals(board_id, member_id)
    return http.json_response(200, {"memberIds": rivals})


lambda_handler = http.entrypoint(app)
