"""The client an agent calls countersign with."""

from __future__ import annotations

import builtins
import math
import time
from collections.abc import Iterator, Mapping
from typing import Any

from . import calls
from .errors import WaitTimeout
from .request import Page, Request, Tool
from .transport import RETRIED, Call, T, Transport
from .version import __version__


class Client:
    """Calls one countersign server as one agent (its bearer token).

    ``timeout`` bounds each HTTP exchange, in seconds (a long-poll gets its
    hold on top, so a 30 s poll may take timeout + 30 s); ``retry_for`` is
    how long a call that may be sent again (request, get, list, tools) keeps
    sending the same bytes after a network error or a 503 before it raises
    the last error; wait() retries until its own timeout. cancel() and
    redrive() are sent once: a first attempt that landed would make a second
    one a refusal.

    It keeps no connection open between calls and may be shared between
    threads.
    """

    def __init__(self, url: str, token: str, *, timeout: float = 30.0, retry_for: float = 60.0) -> None:
        self.retry_for = retry_for
        self._transport = Transport(url, token, f"countersign-python/{__version__}", timeout=timeout)

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
        return self._run(calls.create(tool, effect, run_id, step, summary, reason, requested_for, idempotency_key))

    def get(self, ref: str) -> Request:
        """Return the request named by ref: its id or its full key."""
        return self._run(calls.get(ref))

    def list_page(self, *, status: str | None = None, tool: str | None = None, run_id: str | None = None,
                  settled: bool | None = None, limit: int | None = None, cursor: str | None = None) -> Page:
        """Return one page of this agent's requests (an admin agent's: every
        agent's), newest first, filtered by every argument given; pass its
        ``next_cursor`` as ``cursor`` for the next page."""
        return self._run(calls.list_page(status, tool, run_id, settled, limit, cursor))

    def list(self, *, status: str | None = None, tool: str | None = None, run_id: str | None = None,
             settled: bool | None = None, limit: int | None = None) -> Iterator[Request]:
        """Iterate over this agent's requests, newest first, filtered by
        every argument given, reading page after page (``limit`` requests a
        page, 1 to 100) as the iteration needs them. Paging is by keyset:
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
        req: Request | None = None
        try:
            req = self._transport.run(calls.get(ref), deadline)
            while not req.settled and (remaining := deadline - time.monotonic()) >= calls.MIN_POLL:
                req = self._transport.run(calls.poll(ref, req.version, remaining), deadline)
        except RETRIED as e:
            # Retries end only at the deadline: the wait is over.
            raise WaitTimeout(ref, req) from e
        if not req.settled:
            raise WaitTimeout(ref, req)
        return req

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
        """request(), then wait() until the request is settled: the calls an
        agent makes, in one. Retries resend the same intent, so the key
        never changes; ``timeout`` bounds the wait."""
        req = self.request(tool=tool, effect=effect, run_id=run_id, step=step, summary=summary, reason=reason,
                           requested_for=requested_for, idempotency_key=idempotency_key)
        return req if req.settled else self.wait(req.id, timeout=timeout)

    def cancel(self, ref: str) -> Request:
        """Withdraw a pending request; one no longer pending raises
        AlreadyDecidedError. Sent once."""
        return self._run(calls.cancel(ref))

    def redrive(self, ref: str) -> Request:
        """Send the request's newest callback again, due at once; raises
        CallbackNotConfiguredError or NothingToRedriveError when there is
        none. Sent once."""
        return self._run(calls.redrive(ref))

    def tools(self) -> builtins.list[Tool]:
        """Return the tools this agent may request."""
        return self._run(calls.tools())

    def _run(self, call: Call[T]) -> T:
        return self._transport.run(call, time.monotonic() + self.retry_for)
