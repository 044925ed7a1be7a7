"""GET /boards/{boardId}/scores: the members whose score lies in a band, with their ranks."""

from podium import http, validation
from podium.access import Route
from podium.bands import Band
from podium.http import Response
from podium.wiring import services

app = http.create_app()


@app.get("/boards/<boardId>/scores")
def scores(boardId: str) -> Response:
    board_id = http.path_board(app, boardId)
    http.authorize(app, Route.SCORES, board_id)
    params = http.query(app)
    least, most = validation.score_band(params)
    limit = validation.page_limit(params, "scores")
    page = services().bands.scores(
        board_id, Band(least, most), limit, params.get("cursor"), params.get("period")
    )
    return http.page_response(board_id, page)


lambda_handler = http.entrypoint(app)
