"""POST /boards/{boardId}/events: log hot-counter events (inserts only), folded within seconds."""

from podium import http, validation
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.post("/boards/<boardId>/events")
def log_events(boardId: str) -> Response:
    board_id = http.path_board(app, boardId)
    requests = validation.events_request(http.body(app, required=True))
    return http.json_response(202, {"accepted": services().members.log_events(board_id, requests)})


lambda_handler = http.entrypoint(app)
