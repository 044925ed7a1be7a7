"""GET /boards/{boardId}/members/{memberId}: one member."""

from aws_lambda_powertools.event_handler import Response

from podium import http
from podium.service import default_service

app = http.create_app()


@app.get("/boards/<boardId>/members/<memberId>")
def get_member(boardId: str, memberId: str) -> Response[str]:
    period = http.query(app).get("period")
    member = default_service().get_member(
        http.path_board(app, boardId), http.path_member(app, memberId), period
    )
    return http.json_response(200, member.to_json())


lambda_handler = http.entrypoint(app)
