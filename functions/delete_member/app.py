"""DELETE /boards/{boardId}/members/{memberId}: the member leaves every ranking."""

from aws_lambda_powertools.event_handler import Response

from podium import http
from podium.service import default_service

app = http.create_app()


@app.delete("/boards/<boardId>/members/<memberId>")
def delete_member(boardId: str, memberId: str) -> Response[str]:
    default_service().delete_member(http.path_board(app, boardId), http.path_member(app, memberId))
    return http.no_content()


lambda_handler = http.entrypoint(app)
