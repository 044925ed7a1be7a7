"""GET /boards/{boardId}/members/{memberId}/rivals: the members this member follows."""

from podium import http
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.get("/boards/<boardId>/members/<memberId>/rivals")
def get_rivals(boardId: str, memberId: str) -> Response:
    rivals = services().social.get_rivals(http.path_board(app, boardId), http.path_member(app, memberId))
    return http.json_response(200, {"memberIds": rivals})


lambda_handler = http.entrypoint(app)
