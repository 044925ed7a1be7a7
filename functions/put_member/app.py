"""PUT /boards/{boardId}/members/{memberId}: add a member, or replace its data or score."""

from podium import access, http, validation
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.put("/boards/<boardId>/members/<memberId>")
def put_member(boardId: str, memberId: str) -> Response:
    board_id, member_id = http.path_board_and_member(app, boardId, memberId)
    who = http.authorize(app, Route.PUT_MEMBER, board_id, members=[member_id])
    body = http.body(app)
    request = validation.member_request(body)
    access.require_fields(who, [name for name in validation.ADMIN_MEMBER_FIELDS if name in body])
    member, created = services().members.put_member(board_id, member_id, request)
    return http.json_response(201 if created else 200, member.to_json(with_hidden=who.is_admin))


lambda_handler = http.entrypoint(app)
