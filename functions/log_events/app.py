"""POST /boards/{boardId}/events: log hot-counter events (inserts only), folded within seconds."""

from podium import access, http, validation
from podium.access import Route
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.post("/boards/<boardId>/events")
def log_events(boardId: str) -> Response:
    board_id = http.path_board(app, boardId)
    policy = services().boards.policy(board_id)  # the board's limits, and who may write
    who = http.authorize(app, Route.LOG_EVENTS, policy=policy)
    requests = validation.events_request(http.body(app, required=True))
    # A player's batch may hold its own events only: one of another member's is 403 whole.
    access.require(who, Route.LOG_EVENTS, board=policy, members=[r.member_id for r in requests])
    # A player's batch holds its own events only (else 403): they count toward its rate.
    counted_for = None if who.is_admin else who.member_id
    limits = policy.limits if policy else None
    accepted = services().members.log_events(board_id, requests, limits, counted_for=counted_for)
    return http.json_response(202, {"accepted": accepted})


lambda_handler = http.entrypoint(app)
