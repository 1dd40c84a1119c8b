"""The calls of countersign's agent API, as Client and AsyncClient send them."""

from __future__ import annotations

import dataclasses
import json
import math
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from .canonical import dumps
from .key import check_client_key, has_key_prefix, intent_key
from .request import Page, Request, Tool
from .transport import Answer, Call

#: How long one long-poll asks the server to hold, in seconds.
POLL_WAIT = 30

#: The least time left, in seconds, that is worth another long-poll: the
#: server holds whole milliseconds.
MIN_POLL = 0.001


#: The most reviewer's edits a wait follows, from an edited request to its
#: edit (superseded_by), before it returns the edited one as it is.
MAX_EDIT_HOPS = 5


def followed(req: Request, edited_from: Sequence[str]) -> Request:
    """req, naming the edited requests a wait followed to reach it."""
    return dataclasses.replace(req, edited_from=tuple(edited_from)) if edited_from else req


def _json(answer: Answer) -> Any:
    return json.loads(answer.body)


def _request(answer: Answer) -> Request:
    return Request.from_json(_json(answer))


def _path(ref: str) -> str:
    return "/v1/requests/" + urllib.parse.quote(ref, safe="")


def create(tool: str, effect: Mapping[str, Any], run_id: str, step: int | str, summary: str | None,
           reason: str | None, requested_for: str | None, idempotency_key: str | None) -> Call[Request]:
    """POST /v1/requests. Safe to send again: the same bytes replay. A client
    key countersign would refuse raises InvalidKeyError here."""
    if idempotency_key:
        check_client_key(idempotency_key)
        if has_key_prefix(idempotency_key):
            check_client_key(idempotency_key, intent_key(run_id, step, tool, effect))
    intent: dict[str, Any] = {"run_id": run_id, "step": step, "tool": tool, "effect": effect}
    for name, value in (("summary", summary), ("reason", reason), ("requested_for", requested_for),
                        ("idempotency_key", idempotency_key)):
        if value is not None:
            intent[name] = value

    def read(answer: Answer) -> Request:
        replayed = answer.status == 200 and answer.headers.get("Idempotent-Replayed") == "true"
        return Request.from_json(_json(answer), replayed=replayed)

    return Call("POST", "/v1/requests", dumps(intent).encode("utf-8"), read)


def get(ref: str) -> Call[Request]:
    """GET /v1/requests/{ref}."""
    return Call("GET", _path(ref), None, _request)


def poll(ref: str, since: int, hold: float) -> Call[Request]:
    """GET /v1/requests/{ref}?wait=…&since=…: the request once its version
    is past since or it is settled, or as it is when the hold ends. The
    server holds at most ``hold`` seconds (and POLL_WAIT), to the
    millisecond below, so a wait with a timeout ends on time."""
    millis = math.floor(min(hold, POLL_WAIT) * 1000)
    wait = f"{millis // 1000}s" if millis % 1000 == 0 else f"{millis}ms"
    query = urllib.parse.urlencode({"wait": wait, "since": str(since)})
    return Call("GET", f"{_path(ref)}?{query}", None, _request, hold=millis / 1000)


def list_page(status: str | None, tool: str | None, run_id: str | None, settled: bool | None, limit: int | None,
              cursor: str | None) -> Call[Page]:
    """GET /v1/requests with the filters given."""
    query: dict[str, str] = {}
    for name, value in (("status", status), ("tool", tool), ("run_id", run_id), ("cursor", cursor)):
        if value is not None:
            query[name] = value
    if settled is not None:
        query["settled"] = "true" if settled else "false"
    if limit is not None:
        query["limit"] = str(limit)

    def read(answer: Answer) -> Page:
        page = _json(answer)
        return Page(tuple(Request.from_json(r) for r in page["data"]), page.get("next_cursor"))

    return Call("GET", "/v1/requests" + ("?" + urllib.parse.urlencode(query) if query else ""), None, read)


def cancel(ref: str) -> Call[Request]:
    """POST /v1/requests/{ref}/cancel, sent once: a first attempt that
    landed would make a second one a refusal."""
    return Call("POST", _path(ref) + "/cancel", None, _request, retry=False)


def redrive(ref: str) -> Call[Request]:
    """POST /v1/requests/{ref}/redrive, sent once."""
    return Call("POST", _path(ref) + "/redrive", None, _request, retry=False)


def outcome(ref: str, status: str, provider_ref: str | None, detail: str | None) -> Call[Request]:
    """POST /v1/requests/{ref}/outcome. Safe to send again: the same report
    twice records one."""
    if status not in ("succeeded", "failed"):
        raise ValueError(f"an outcome's status is succeeded or failed, not {status!r}")
    report: dict[str, Any] = {"status": status}
    for name, value in (("provider_ref", provider_ref), ("detail", detail)):
        if value is not None:
            report[name] = value
    return Call("POST", _path(ref) + "/outcome", dumps(report).encode("utf-8"), _request)


def tools() -> Call[list[Tool]]:
    """GET /v1/tools."""
    return Call("GET", "/v1/tools", None, lambda answer: [Tool.from_json(t) for t in _json(answer)["tools"]])
