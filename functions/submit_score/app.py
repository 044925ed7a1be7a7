"""POST /boards/{boardId}/members/{memberId}/score: apply the board's operator atomically."""

from aws_lambda_powertools.metrics import MetricUnit

from podium import http, validation
from podium.access import Route
from podium.http import Response
from podium.idempotency import SubmissionKey
from podium.log import metrics
from podium.wiring import services

app = http.create_app()


@app.post("/boards/<boardId>/members/<memberId>/score")
def submit_score(boardId: str, memberId: str) -> Response:
    board_id, member_id = http.path_board_and_member(app, boardId, memberId)
    policy = services().boards.policy(board_id)  # the board's limits, and who may write
    http.authorize(app, Route.SUBMIT_SCORE, policy=policy, members=[member_id])
    value = validation.score_value(http.body(app, required=True))
    key = SubmissionKey.of(app.current_event.headers.get("Idempotency-Key"), value)
    change = services().members.submit_score(
        board_id, member_id, value, policy.limits if policy else None, key=key
    )
    metrics.add_metric(name="ScoreSubmitted", unit=MetricUnit.Count, value=1)
    return http.json_response(200, change.to_json())


lambda_handler = http.entrypoint(app, with_metrics=True)
