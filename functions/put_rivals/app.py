"""PUT /boards/{boardId}/members/{memberId}/rivals: the members this member follows."""

from podium import http, validation
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.put("/boards/<boardId>/members/<memberId>/rivals")
def put_rivals(boardId: str, memberId: str) -> Response:
    board_id, member_id = http.path_board_and_member(app, boardId, memberId)
    http.authorize(app, Route.PUT_RIVALS, members=[member_id])
    rivals = validation.rivals(http.body(app, required=True))
    return http.json_response(200, {"memberIds": services().social.put_rivals(board_id, member_id, rivals)})


lambda_handler = http.entrypoint(app)
