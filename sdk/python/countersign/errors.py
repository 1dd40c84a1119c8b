"""The errors countersign answers, one class per stable error code.

Every refusal is one envelope, ``{"error": {"code", "message", "field",
"errors", "request_id"}}``; ``APIError`` carries it, and each code of the
ErrorCode enum in the OpenAPI document (GET /v1/openapi.json) has its own
subclass, so ``except KeyReusedError`` reads like the code it catches.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from email.message import Message
from typing import Any


class CountersignError(Exception):
    """The base of every error this package raises about countersign."""


@dataclass(frozen=True)
class Violation:
    """One value at fault: its JSON Pointer (or a header's or parameter's
    name) and why."""

    field: str
    message: str


class APIError(CountersignError):
    """A refusal from countersign: the HTTP status, the stable code, a
    sentence for a human, the value at fault (``field``, and ``errors`` when
    there are several), the ``request_id`` the server logged the call under,
    and for a 503 the ``retry_after`` it asked for, in seconds."""

    #: The error code the class stands for; "" on APIError itself, which is
    #: raised for a code this version does not know (or an answer without
    #: the envelope, such as a proxy's page).
    code: str = ""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        field: str | None = None,
        errors: tuple[Violation, ...] = (),
        request_id: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.errors = errors
        self.request_id = request_id
        self.retry_after = retry_after
        text = f"countersign: {code or 'HTTP ' + str(status)} ({status})"
        if field:
            text += f" at {field}"
        text += f": {message}"
        if request_id:
            text += f" (request {request_id})"
        super().__init__(text)


class MalformedJSONError(APIError):
    """The body was not JSON, or not UTF-8 (a bug in the caller)."""

    code = "malformed_json"


class InvalidRequestError(APIError):
    """A field is missing or wrong, or a number is inexact; ``field`` names it."""

    code = "invalid_request"


class InvalidEffectError(APIError):
    """The effect fails the tool's effect_schema; ``errors`` lists every
    violation. Nothing was stored."""

    code = "invalid_effect"


class UnknownToolError(APIError):
    """The configuration has no such tool; ``tools`` are the tools this
    agent may use (the message names them too)."""

    code = "unknown_tool"
    tools: tuple[str, ...] = ()


class DeniedByPolicyError(APIError):
    """The tool's policy refuses this write (403): ``tier`` names the rule
    that denied it, and ``key`` the request, stored as rejected by
    ``policy:<tier>`` (get() finds it). Sending the same intent again gets
    the same answer: only a different write, or a person changing the
    policy, can proceed. Nothing is sent to the tool."""

    code = "denied_by_policy"
    key: str | None = None
    tier: str | None = None


class OutcomeConflictError(APIError):
    """An agent-executed write's outcome was reported already, and
    differently: the first report stands."""

    code = "outcome_conflict"


class NotAgentExecutedError(APIError):
    """An outcome reported for a request that awaits none from its agent:
    countersign sends its tool's writes, or it was not approved."""

    code = "not_agent_executed"


class KeyReusedError(APIError):
    """The key already names another write (or another agent's request).
    Sending it again will not help: the intent must change."""

    code = "key_reused"


class PrunedError(APIError):
    """The key named this intent's request, which settled and was pruned
    under the server's retention policy; ``final_status`` says how it ended
    (rejected, expired, cancelled, succeeded or failed). The key never runs
    again: a new write needs a new key."""

    code = "pruned"
    final_status: str | None = None


class UnauthorizedError(APIError):
    """No token, or one no agent holds."""

    code = "unauthorized"


class TooLargeError(APIError):
    """The body is over 1 MiB."""

    code = "too_large"


class NotFoundError(APIError):
    """No request has that id or key, or it is another agent's."""

    code = "not_found"


class AlreadyDecidedError(APIError):
    """The request is no longer pending."""

    code = "already_decided"


class StaleCardError(APIError):
    """A reviewer's refusal; never answered to an agent."""

    code = "stale_card"


class NotApproverError(APIError):
    """A reviewer's refusal; never answered to an agent."""

    code = "not_approver"


class NoLongerApproverError(APIError):
    """A reviewer's refusal; never answered to an agent."""

    code = "no_longer_approver"


class SelfApprovalError(APIError):
    """A reviewer's refusal; never answered to an agent."""

    code = "self_approval"


class AlreadyResolvedError(APIError):
    """A reviewer's refusal; never answered to an agent."""

    code = "already_resolved"


class CallbackNotConfiguredError(APIError):
    """A redrive for an agent without a callback."""

    code = "callback_not_configured"


class NothingToRedriveError(APIError):
    """A redrive of a request that has sent no callback yet."""

    code = "nothing_to_redrive"


class UnavailableError(APIError):
    """countersign cannot reach its database; the calls that may be resent
    were, after ``retry_after``, until their time ran out."""

    code = "unavailable"


class InternalError(APIError):
    """An unexpected failure on the server."""

    code = "internal"


class MethodNotAllowedError(APIError):
    """A method the route does not take (a call this package never makes)."""

    code = "method_not_allowed"


class UnsupportedMediaTypeError(APIError):
    """A body not sent as application/json (a call this package never makes)."""

    code = "unsupported_media_type"


#: The class of each error code.
ERRORS: Mapping[str, type[APIError]] = {
    cls.code: cls
    for cls in (
        MalformedJSONError, InvalidRequestError, InvalidEffectError, UnknownToolError, DeniedByPolicyError,
        KeyReusedError, PrunedError, UnauthorizedError, TooLargeError, NotFoundError, AlreadyDecidedError,
        StaleCardError, NotApproverError, NoLongerApproverError, SelfApprovalError, AlreadyResolvedError,
        CallbackNotConfiguredError, NothingToRedriveError, UnavailableError, InternalError,
        MethodNotAllowedError, UnsupportedMediaTypeError, OutcomeConflictError, NotAgentExecutedError,
    )
}


class WaitTimeout(CountersignError, TimeoutError):
    """The request was not settled when the wait ended; ``request`` is the
    last answer read (None when none was)."""

    def __init__(self, ref: str, request: object | None) -> None:
        self.ref = ref
        self.request = request
        super().__init__(f"countersign: request {ref} was not settled when the wait ended")


class NotApprovedError(CountersignError):
    """A gated call's request was decided otherwise than approved:
    ``status`` is rejected, expired or cancelled, and ``request`` the
    request as it stands. Nothing was called."""

    def __init__(self, request: Any, message: str | None = None) -> None:
        self.request = request
        self.status: str = request.status
        super().__init__(message or f"countersign: request {request.id} ({request.tool}) was {request.status}, not approved")


class RejectedError(NotApprovedError):
    """A gated call's request was rejected: ``reason`` is the reviewer's
    words ("" when none were given), ``by`` who rejected it, and ``retry``
    what the rejection means for trying again (the same intent gets the
    same rejection; a new step asks again)."""

    def __init__(self, request: Any) -> None:
        decision = request.decision
        self.reason: str = decision.reason if decision else ""
        self.by: str = decision.by if decision else ""
        self.retry: str = decision.retry if decision else ""
        text = f"countersign: request {request.id} ({request.tool}) was rejected"
        if self.by:
            text += f" by {self.by}"
        text += f": {self.reason}" if self.reason else " (no reason given)"
        if self.retry:
            text += f". {self.retry}"
        super().__init__(request, text)


class WriteFailedError(CountersignError):
    """A gated call found the write's outcome recorded as failed by an
    earlier call (whose function raised), and did not call the function
    again: ``request`` is the request, ``provider_ref`` and ``detail`` what
    the failure reported (``detail`` None when the server's record was all
    there was to read)."""

    def __init__(self, request: Any, provider_ref: str | None, detail: str | None) -> None:
        self.request = request
        self.provider_ref = provider_ref
        self.detail = detail
        text = f"countersign: the write of request {request.id} ({request.tool}) failed earlier"
        super().__init__(text + (f": {detail}" if detail else ""))


class ConnectionError(CountersignError, OSError):
    """An exchange that never reached an answer: the connection failed (the
    server is down, the name does not resolve) or it broke before the answer
    was read. ``__cause__`` is the network layer's error. It is an OSError
    too, so code that caught the bare network errors still catches it. (It
    has the TypeScript SDK's name; import it as ``countersign.ConnectionError``
    to keep the built-in one in view.)"""


class ConnectionTimeoutError(ConnectionError, TimeoutError):
    """An exchange whose answer did not come within the client's timeout
    (and a long-poll's hold)."""


class SignatureError(CountersignError):
    """A Countersign-Signature that does not prove countersign sent what it
    covers, with the secret, within the tolerance."""


def error_from(status: int, headers: Message, body: bytes) -> APIError:
    """Build the error of an answer of status 400 or more."""
    code, message, field, violations, request_id = "", "", None, (), headers.get("Request-Id")
    try:
        envelope = json.loads(body)["error"]
        code = str(envelope["code"])
        message = str(envelope.get("message", ""))
        field = envelope.get("field")
        violations = tuple(Violation(str(v.get("field", "")), str(v.get("message", ""))) for v in envelope.get("errors") or ())
        request_id = envelope.get("request_id") or request_id
    except (ValueError, KeyError, TypeError, AttributeError):
        # Not countersign's envelope: a proxy's page, say.
        message = f"HTTP {status}"
        if status == 503:
            code = "unavailable"
    cls = ERRORS.get(code, APIError)
    error = cls(status, code, message, field, violations, request_id, retry_after(headers.get("Retry-After")))
    if isinstance(error, PrunedError):
        error.final_status = envelope.get("status")
    if isinstance(error, UnknownToolError):
        error.tools = tuple(str(t) for t in envelope.get("tools") or ())
    if isinstance(error, DeniedByPolicyError):
        error.key, error.tier = envelope.get("key"), envelope.get("tier")
    return error


def retry_after(value: str | None) -> float | None:
    """Read Retry-After: delay seconds, or an HTTP date."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
