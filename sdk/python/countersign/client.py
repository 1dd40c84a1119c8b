"""The client an agent calls countersign with."""

from __future__ import annotations

import builtins
import json
import math
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any

from .version import __version__
from .canonical import dumps
from .errors import WaitTimeout
from .request import Page, Request, Tool
from .transport import Answer, Transport

#: How long one long-poll of wait() asks the server to hold, in seconds.
POLL_WAIT = 30


class Client:
    """Calls one countersign server as one agent (its bearer token).

    ``timeout`` bounds each HTTP exchange (a long-poll gets its wait on
    top); ``retry_for`` is how long, in seconds, a call that may be sent
    again (request, get, list, tools) keeps resending the same bytes after a
    network error or a 503 before it raises the last error. wait() retries
    until its own timeout. cancel() and redrive() are sent once: a first
    attempt that landed would make a second one a refusal.

    It keeps no connection open between calls and may be shared between
    threads.
    """

    def __init__(self, url: str, token: str, *, timeout: float = 30.0, retry_for: float = 60.0) -> None:
        self.timeout = timeout
        self.retry_for = retry_for
        self._transport = Transport(url, token, f"countersign-python/{__version__}")

    def request(
        self,
        *,
        tool: str,
        effect: Mapping[str, Any],
        run_id: str,
        step: int | str,
        summary: str | None = None,
        reason: str | None = None,
        requested_for: str | None = None,
        idempotency_key: str | None = None,
    ) -> Request:
        """Ask for a write; return the request, created (201) or, when its key
        is already stored, the one it names (``replayed`` set), whatever its
        state. The key is ``intent_key(run_id, step, tool, effect)`` unless
        ``idempotency_key`` is given. A network error or a 503 sends the
        same bytes again, which replays rather than creating a second
        request. Numbers are sent as ``countersign.canonical`` describes."""
        intent: dict[str, Any] = {"run_id": run_id, "step": step, "tool": tool, "effect": effect}
        for name, value in (("summary", summary), ("reason", reason), ("requested_for", requested_for),
                            ("idempotency_key", idempotency_key)):
            if value is not None:
                intent[name] = value
        body = dumps(intent).encode("utf-8")
        answer = self._call("POST", "/v1/requests", body)
        replayed = answer.status == 200 and answer.headers.get("Idempotent-Replayed") == "true"
        return Request.from_json(_json(answer), replayed=replayed)

    def get(self, ref: str) -> Request:
        """Return the request named by ref: its id or its full key."""
        return Request.from_json(_json(self._call("GET", _path(ref))))

    def list_page(self, *, status: str | None = None, tool: str | None = None, run_id: str | None = None,
                  settled: bool | None = None, limit: int | None = None, cursor: str | None = None) -> Page:
        """Return one page of this agent's requests (an admin agent's: every
        agent's), newest first, filtered by every argument given; pass its
        ``next_cursor`` as ``cursor`` for the next page."""
        query: dict[str, str] = {}
        for name, value in (("status", status), ("tool", tool), ("run_id", run_id), ("cursor", cursor)):
            if value is not None:
                query[name] = value
        if settled is not None:
            query["settled"] = "true" if settled else "false"
        if limit is not None:
            query["limit"] = str(limit)
        path = "/v1/requests" + ("?" + urllib.parse.urlencode(query) if query else "")
        page = _json(self._call("GET", path))
        return Page(tuple(Request.from_json(r) for r in page["data"]), page.get("next_cursor"))

    def list(self, *, status: str | None = None, tool: str | None = None, run_id: str | None = None,
             settled: bool | None = None, limit: int | None = None) -> Iterator[Request]:
        """Iterate over this agent's requests, newest first, filtered by
        every argument given, reading page after page (``limit`` requests
        a page, 1 to 100) as the iteration needs them. Paging is by keyset:
        requests made meanwhile neither repeat nor shift the listing."""
        cursor: str | None = None
        while True:
            page = self.list_page(status=status, tool=tool, run_id=run_id, settled=settled, limit=limit, cursor=cursor)
            yield from page.data
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    def wait(self, ref: str, timeout: float | None = None) -> Request:
        """Return the request named by ref once it is settled (rejected,
        expired, cancelled, or its execution succeeded or failed),
        long-polling from the version it last saw so no change is missed.
        With ``timeout`` (seconds) it raises WaitTimeout when that passes
        first; without, it waits as long as it takes. A request whose write
        waits for a person (needs_review) is not settled."""
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        # A plain read first: a settled request needs no poll, and its
        # version is where the first poll starts.
        req = Request.from_json(_json(self._call("GET", _path(ref), deadline=deadline)))
        while not req.settled:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeout(ref, req)
            req = self._poll(ref, req.version, min(remaining, POLL_WAIT), deadline)
        return req

    def _poll(self, ref: str, since: int, hold: float, deadline: float) -> Request:
        """One long-poll: the request once its version is past since or it
        is settled, or as it is when hold seconds end."""
        seconds = max(1, math.ceil(hold))
        query = urllib.parse.urlencode({"wait": f"{seconds}s", "since": str(since)})
        return Request.from_json(_json(self._call("GET", f"{_path(ref)}?{query}", deadline=deadline, hold=seconds)))

    def request_and_wait(
        self,
        *,
        tool: str,
        effect: Mapping[str, Any],
        run_id: str,
        step: int | str,
        summary: str | None = None,
        reason: str | None = None,
        requested_for: str | None = None,
        idempotency_key: str | None = None,
        timeout: float | None = None,
    ) -> Request:
        """request(), then wait() until the request is settled: the three
        calls an agent makes, in one. Retries resend the same intent, so
        the key never changes."""
        req = self.request(tool=tool, effect=effect, run_id=run_id, step=step, summary=summary, reason=reason,
                           requested_for=requested_for, idempotency_key=idempotency_key)
        return req if req.settled else self.wait(req.id, timeout=timeout)

    def cancel(self, ref: str) -> Request:
        """Withdraw a pending request; one no longer pending raises
        AlreadyDecidedError. Sent once."""
        return Request.from_json(_json(self._call("POST", _path(ref) + "/cancel", retry=False)))

    def redrive(self, ref: str) -> Request:
        """Send the request's newest callback again, due at once (409
        callback_not_configured, nothing_to_redrive otherwise). Sent once."""
        return Request.from_json(_json(self._call("POST", _path(ref) + "/redrive", retry=False)))

    def tools(self) -> builtins.list[Tool]:
        """Return the tools this agent may request."""
        return [Tool.from_json(t) for t in _json(self._call("GET", "/v1/tools"))["tools"]]

    def _call(self, method: str, path: str, body: bytes | None = None, *, retry: bool = True,
              deadline: float | None = None, hold: float = 0) -> Answer:
        retry_until = None
        if retry:
            retry_until = deadline if deadline is not None else time.monotonic() + self.retry_for
        # A long-poll's answer comes when the hold ends: give it that on top.
        return self._transport.call(method, path, body, timeout=self.timeout + hold, retry_until=retry_until)


def _path(ref: str) -> str:
    return "/v1/requests/" + urllib.parse.quote(ref, safe="")


def _json(answer: Answer) -> Any:
    return json.loads(answer.body)
