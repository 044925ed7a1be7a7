"""DELETE /boards/{boardId}/members/{memberId}: the member leaves every ranking."""

from podium import http
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.delete("/boards/<boardId>/members/<memberId>")
def delete_member(boardId: str, memberId: str) -> Response:
    board_id, member_id = http.path_board_and_member(app, boardId, memberId)
    http.authorize(app, Route.DELETE_MEMBER)
    services().members.delete_member(board_id, member_id)
    return http.no_content()


lambda_handler = http.entrypoint(app)
