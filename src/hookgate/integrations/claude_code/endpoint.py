"""``POST /api/v1/claude-code/hook``: Claude Code's hook contract spoken by the gateway.

The body is Claude Code's hook input JSON, exactly what Claude Code writes to a hook's stdin
or posts to an ``http`` hook; the answer is Claude Code's hook output JSON, the same answer
``hookgate claude-code`` prints. So Claude Code can reach a shared gateway without starting
Python for every event: with its own ``http`` hook type, or with a ``curl`` command hook
(see ``hookgate claude-code install --transport``).

Status codes carry the failure rules:

* 200 with the answer, including when hookgate failed on an event Claude Code can stop
  (``PreToolUse``, ``PermissionRequest``, ``UserPromptSubmit``): the answer then stops it
  (deny / block) with the reason, which holds for both transports.
* 401/403 for a missing or refused key, 4xx for input that is not a hook input object, 502
  for a failure on an event Claude Code cannot stop. The curl command turns any non-2xx into
  exit 2 (blocking events) or 1; Claude Code's ``http`` hook treats them as non-blocking
  errors (which is why curl is the default transport).
"""

from __future__ import annotations

import uuid
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from hookgate.client.outcome import outcome_from_payload
from hookgate.integrations.claude_code.contract import (
    APPROVAL_WAIT_S,
    answer_claude_code,
    failure_json,
)
from hookgate.integrations.claude_code.gateway_transport import CLAUDE_CODE_PATH
from hookgate.log import log_event
from hookgate.outcome import Outcome
from hookgate.server.auth import Principal
from hookgate.server.errors import ApiError
from hookgate.server.gateway import Gateway
from hookgate.server.method_table import METHODS
from hookgate.server.methods import call_method
from hookgate.server.rest import API_PREFIX, authenticate, error_response, json_response, read_json

__all__ = ["CLAUDE_CODE_PATH", "claude_code_routes"]

assert CLAUDE_CODE_PATH.startswith(API_PREFIX)
_METHOD: Final = "claude-code.hook"


async def claude_code_hook(request: Request) -> Response:
    gateway: Gateway = request.app.state.gateway
    try:
        principal = await authenticate(request)
        body = await read_json(request, gateway.options.max_frame_bytes)
        if not isinstance(body, dict) or not isinstance(body.get("hook_event_name"), str):
            raise ApiError("INVALID_REQUEST", "the body must be Claude Code's hook input object")
    except ApiError as exc:
        gateway.metrics.count_request(_METHOD, "rest", exc.code)
        return error_response(exc)
    event: str = body["hook_event_name"]
    answer = None
    try:
        gateway.enter()
    except ApiError as exc:  # shutting down: still an answer that stops the action
        reason = exc.message
    else:
        try:
            answer = await answer_claude_code(body, _evaluator(gateway, principal))
        except Exception as exc:  # a bug here must still stop the action
            incident = uuid.uuid4().hex[:12]
            log_event("hookgate.request_failed", method=_METHOD, incident=incident,
                      error=repr(exc))
            reason = f"internal error (incident {incident}); see the gateway log"
        finally:
            gateway.leave()
    if answer is not None and answer.exit_code == 0:
        gateway.metrics.count_request(_METHOD, "rest", "ok")
        return json_response(answer.stdout or {})
    if answer is not None:
        reason = answer.stderr.removeprefix("hookgate: ")
    stop = failure_json(event, reason)
    gateway.metrics.count_request(_METHOD, "rest", "FAILED")
    if stop is not None:
        return json_response(stop)  # a 200 that stops the action: fail closed on both transports
    return json_response({"error": {"code": "FAILED", "message": reason}}, 502)


def _evaluator(gateway: Gateway, principal: Principal) -> Any:
    """Decide through ``hooks.dispatch`` itself: the same role check, tenant scoping, input
    limits, audit and metrics as any other dispatch."""
    method = METHODS["hooks.dispatch"]

    async def evaluate(event: str, payload: dict[str, Any]) -> Outcome:
        # A hook that asks a person waits within Claude Code's hook timeout.
        params = {"event": event, "input": payload, "wait": True,
                  "approvalWaitS": APPROVAL_WAIT_S}
        return outcome_from_payload(await call_method(gateway, method, principal, params))

    return evaluate


def claude_code_routes() -> list[Route]:
    return [Route(CLAUDE_CODE_PATH, claude_code_hook, methods=["POST"])]
