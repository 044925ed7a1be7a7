"""GET /boards/{boardId}/members/{memberId}/rank: one member's position."""

from aws_lambda_powertools.event_handler import Response

from podium import http
from podium.service import default_service

app = http.create_app()


@app.get("/boards/<boardId>/members/<memberId>/rank")
def rank(boardId: str, memberId: str) -> Response[str]:
    period = http.query(app).get("period")
    answer = default_service().rank(http.path_board(app, boardId), http.path_member(app, memberId), period)
    return http.json_response(200, answer)


lambda_handler = http.entrypoint(app)
