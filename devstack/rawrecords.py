"""``GetRecords`` without botocore's response parser, for the local stand-in of Lambda's
event source mapping (``devstack.streams.StreamPoller``).

botocore walks every attribute of every record of a ``GetRecords`` answer through the
service model: on the local stack that parse took a third of the Python time the stream
consumers used (``py-spy --gil`` while they caught up), for work that in AWS the managed
poller does outside the functions. The answer's JSON is already what the event source
mapping hands a function (attribute values as DynamoDB JSON, binaries as base64 text,
``ApproximateCreationDateTime`` as seconds since the epoch), so ``json.loads`` is all it
needs.

The request is still the client's own: botocore serialises and signs it (DynamoDB Local
keeps a database per access key id), and only the sending and the parsing are done here,
from the client's ``before-call`` event, the hook botocore gives for answering a call
without its HTTP path (its ``Stubber`` uses it). Errors come back in botocore's shape
(``ClientError`` with the service's code), and an endpoint that does not answer raises
botocore's ``EndpointConnectionError``, so the poller's handling is unchanged.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from botocore.awsrequest import AWSResponse, create_request_object
from botocore.compat import HTTPHeaders
from botocore.exceptions import EndpointConnectionError

EVENT = "before-call.dynamodb-streams.GetRecords"


class _Answer(AWSResponse):
    def __init__(self, url: str, status: int, headers: dict[str, str], body: bytes) -> None:
        super().__init__(url, status, _headers(headers), raw=None)
        self._content = body


class RawGetRecords:
    """Answers a streams client's ``GetRecords`` calls itself (``install``)."""

    def __init__(self, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self._local = threading.local()

    def install(self, client: Any) -> Any:
        events = getattr(getattr(client, "meta", None), "events", None)
        if events is not None:  # a test's stand-in has no botocore events: left as it is
            events.register(EVENT, self._answer, unique_id="devstack-raw-get-records")
        return client

    def _session(self) -> Any:
        import requests

        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def _answer(
        self, model: Any, params: dict[str, Any], request_signer: Any, **_: Any
    ) -> tuple[AWSResponse, dict[str, Any]]:
        import requests

        request = create_request_object(params)
        request_signer.sign(model.name, request)
        prepared = request.prepare()
        try:
            response = self._session().post(
                prepared.url, data=prepared.body, headers=dict(prepared.headers), timeout=self.timeout
            )
        except requests.RequestException as error:
            raise EndpointConnectionError(endpoint_url=prepared.url, error=error) from error
        body = response.content
        answer = _Answer(prepared.url, response.status_code, dict(response.headers), body)
        document = json.loads(body) if body else {}
        if response.status_code >= 300:
            code = str(document.get("__type", "")).rsplit("#", 1)[-1] or str(response.status_code)
            message = document.get("message") or document.get("Message") or ""
            failure = {"Code": code, "Message": message}
            return answer, {"Error": failure, "ResponseMetadata": {"HTTPStatusCode": response.status_code}}
        document["ResponseMetadata"] = {"HTTPStatusCode": response.status_code}
        return answer, document


def _headers(found: dict[str, str]) -> HTTPHeaders:
    headers = HTTPHeaders()
    for name, value in found.items():
        headers[name] = value
    return headers
