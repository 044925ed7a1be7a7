"""GET /boards/{boardId}/members/{memberId}/notifications: the member's inbox, newest first."""

from podium import http, validation
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.get("/boards/<boardId>/members/<memberId>/notifications")
def notifications(boardId: str, memberId: str) -> Response:
    board_id, member_id = http.path_board_and_member(app, boardId, memberId)
    http.authorize(app, Route.NOTIFICATIONS, members=[member_id])
    params = http.query(app)
    limit = validation.page_limit(params, "notifications")
    found, next_cursor = services().social.notifications(board_id, member_id, limit, params.get("cursor"))
    return http.json_response(200, {"notifications": [n.to_json() for n in found], "nextCursor": next_cursor})


lambda_handler = http.entrypoint(app)
