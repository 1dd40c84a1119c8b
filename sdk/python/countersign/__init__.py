"""countersign: the Python SDK of countersign's agent API.

An agent asks for a write, a person countersigns it, and countersign makes
exactly the approved write, once, under a key fixed when the agent decided::

    from countersign import Client

    client = Client("http://127.0.0.1:8080", token)
    req = client.request_and_wait(tool="billing.credit", run_id="r-7f3a", step=6,
                                  effect={"invoice": "inv_8841", "amount_cents": 4200, "currency": "USD"},
                                  summary="Credit 42.00 USD to inv_8841", timeout=3600)
    if req.succeeded:
        ...

It uses the standard library only.
"""

from .aio import AsyncClient
from .canonical import NumberError
from .client import Client
from .errors import (
    ERRORS,
    AlreadyDecidedError,
    AlreadyResolvedError,
    APIError,
    CallbackNotConfiguredError,
    ConnectionError,
    ConnectionTimeoutError,
    CountersignError,
    DeniedByPolicyError,
    InternalError,
    InvalidEffectError,
    InvalidRequestError,
    KeyReusedError,
    PrunedError,
    MalformedJSONError,
    MethodNotAllowedError,
    NoLongerApproverError,
    NotApproverError,
    NotAgentExecutedError,
    NotApprovedError,
    NotFoundError,
    NothingToRedriveError,
    OutcomeConflictError,
    RejectedError,
    SelfApprovalError,
    SignatureError,
    StaleCardError,
    TooLargeError,
    UnauthorizedError,
    UnavailableError,
    UnknownToolError,
    UnsupportedMediaTypeError,
    Violation,
    WaitTimeout,
    WriteFailedError,
)
from .gated import GatedResult, Journal, Outcome
from .key import InvalidKeyError, check_client_key, intent_key
from .request import Callback, Decision, Execution, Page, Policy, Request, RequestPolicy, Response, Tool, Vote
from .signature import DEFAULT_TOLERANCE, verify_signature
from .version import __version__

__all__ = [
    "ERRORS", "DEFAULT_TOLERANCE", "APIError", "AlreadyDecidedError", "AlreadyResolvedError", "AsyncClient",
    "Callback", "CallbackNotConfiguredError", "Client", "ConnectionError", "ConnectionTimeoutError",
    "CountersignError", "Decision", "DeniedByPolicyError", "Execution", "GatedResult", "Journal", "InternalError", "InvalidEffectError", "InvalidKeyError",
    "InvalidRequestError", "KeyReusedError", "MalformedJSONError", "MethodNotAllowedError",
    "NoLongerApproverError", "NotAgentExecutedError", "NotApprovedError", "NotApproverError", "NotFoundError", "NothingToRedriveError",
    "NumberError", "Outcome", "OutcomeConflictError", "Page",
    "Policy", "PrunedError", "RejectedError", "Request", "RequestPolicy", "Response", "SelfApprovalError", "SignatureError", "StaleCardError",
    "Tool", "TooLargeError", "UnauthorizedError", "UnavailableError", "UnknownToolError",
    "UnsupportedMediaTypeError", "Violation", "Vote", "WaitTimeout", "WriteFailedError", "__version__", "check_client_key", "intent_key",
    "verify_signature",
]
