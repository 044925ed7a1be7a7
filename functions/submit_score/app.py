"""POST /boards/{boardId}/members/{memberId}/score: apply the board's operator atomically."""

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit

from podium import http, numbers, validation
from podium.access import Route
from podium.dal import idempotency
from podium.http import Response
from podium.log import metrics
from podium.wiring import services

app = http.create_app()


@app.post("/boards/<boardId>/members/<memberId>/score")
def submit_score(boardId: str, memberId: str) -> Response:
    board_id, member_id = http.path_board_and_member(app, boardId, memberId)
    value = validation.score_value(http.body(app, required=True))
    policy = services().boards.policy(board_id)  # the board's limits, and who may write
    http.authorize(app, Route.SUBMIT_SCORE, policy=policy, members=[member_id])

    def apply() -> dict[str, Any]:
        change = services().members.submit_score(
            board_id, member_id, value, policy.limits if policy else None
        )
        metrics.add_metric(name="ScoreSubmitted", unit=MetricUnit.Count, value=1)
        return {"status": 200, "body": numbers.dumps(change.to_json())}

    answer = idempotency.run_once(
        scope=f"{board_id}#{member_id}",
        key=app.current_event.headers.get("Idempotency-Key"),
        body=numbers.dumps({"value": value}),
        operation=apply,
        lambda_context=app.lambda_context,
    )
    return Response(status_code=answer["status"], content_type=http.JSON, body=answer["body"])


lambda_handler = http.entrypoint(app, with_metrics=True)
