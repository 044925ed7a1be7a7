"""DELETE /boards/{boardId}/members/{memberId}: the member leaves every ranking."""

from podium import http
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.delete("/boards/<boardId>/members/<memberId>")
def delete_member(boardId: str, memberId: str) -> Response:
    services().members.delete_member(http.path_board(app, boardId), http.path_member(app, memberId))
    return http.no_content()


lambda_handler = http.entrypoint(app)
