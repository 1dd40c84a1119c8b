"""The asyncio client: Client's calls, awaitable."""

from __future__ import annotations

import asyncio
import builtins
import functools
import math
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

from . import calls, gated as _gated
from .errors import OutcomeConflictError, WaitTimeout
from .gated import GatedResult
from .request import Page, Request, Tool
from .transport import RETRIED, Call, T, Transport
from .version import __version__

R = TypeVar("R")


class AsyncClient:
    """Client's calls for asyncio code, with the same arguments, retries and
    errors.

    The standard library has no asynchronous HTTP client, so each HTTP
    exchange runs in a thread of the event loop's default executor
    (asyncio.to_thread); the pauses between retries and polls are awaited.
    Cancelling a call takes effect when the exchange in flight ends (a
    long-poll holds at most 30 s), and nothing is sent after it.
    """

    def __init__(self, url: str, token: str, *, timeout: float = 30.0, retry_for: float = 60.0) -> None:
        self.retry_for = retry_for
        self._transport = Transport(url, token, f"countersign-python/{__version__}", timeout=timeout)

    async def request(
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
        """See Client.request."""
        return await self._run(calls.create(tool, effect, run_id, step, summary, reason, requested_for, idempotency_key))

    async def get(self, ref: str) -> Request:
        """See Client.get."""
        return await self._run(calls.get(ref))

    async def list_page(self, *, status: str | None = None, tool: str | None = None, run_id: str | None = None,
                        settled: bool | None = None, limit: int | None = None, cursor: str | None = None) -> Page:
        """See Client.list_page."""
        return await self._run(calls.list_page(status, tool, run_id, settled, limit, cursor))

    async def list(self, *, status: str | None = None, tool: str | None = None, run_id: str | None = None,
                   settled: bool | None = None, limit: int | None = None) -> AsyncIterator[Request]:
        """See Client.list: ``async for request in client.list(...)``."""
        cursor: str | None = None
        while True:
            page = await self.list_page(status=status, tool=tool, run_id=run_id, settled=settled, limit=limit,
                                        cursor=cursor)
            for req in page.data:
                yield req
            if not page.next_cursor:
                return
            cursor = page.next_cursor

    async def wait(self, ref: str, timeout: float | None = None) -> Request:
        """See Client.wait."""
        return await self._wait(ref, timeout, lambda req: req.settled)

    async def wait_for_decision(self, ref: str, timeout: float | None = None) -> Request:
        """See Client.wait_for_decision."""
        return await self._wait(ref, timeout, lambda req: req.decided)

    async def _wait(self, ref: str, timeout: float | None, done: Callable[[Request], bool]) -> Request:
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        # See Client._wait: an edited request's wait goes on with its edit.
        req = await self._wait_one(ref, deadline, done)
        edited_from: list[str] = []
        while req.edited and req.superseded_by and len(edited_from) < calls.MAX_EDIT_HOPS:
            edited_from.append(req.key)
            req = await self._wait_one(req.superseded_by, deadline, done)
        return calls.followed(req, edited_from)

    async def _wait_one(self, ref: str, deadline: float, done: Callable[[Request], bool]) -> Request:
        req: Request | None = None
        try:
            req = await self._transport.arun(calls.get(ref), deadline)
            while not done(req) and (remaining := deadline - time.monotonic()) >= calls.MIN_POLL:
                req = await self._transport.arun(calls.poll(ref, req.version, remaining), deadline)
        except RETRIED as e:
            # Retries end only at the deadline: the wait is over.
            raise WaitTimeout(ref, req) from e
        if not done(req):
            raise WaitTimeout(ref, req)
        return req

    async def request_and_wait(
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
        """See Client.request_and_wait."""
        req = await self.request(tool=tool, effect=effect, run_id=run_id, step=step, summary=summary, reason=reason,
                                 requested_for=requested_for, idempotency_key=idempotency_key)
        return req if req.settled and not req.edited else await self.wait(req.id, timeout=timeout)

    async def cancel(self, ref: str) -> Request:
        """See Client.cancel."""
        return await self._run(calls.cancel(ref))

    async def redrive(self, ref: str) -> Request:
        """See Client.redrive."""
        return await self._run(calls.redrive(ref))

    async def report_outcome(self, ref: str, status: str, provider_ref: str | None = None,
                             detail: str | None = None) -> Request:
        """See Client.report_outcome."""
        return await self._run(calls.outcome(ref, status, provider_ref, detail))

    def gated(self, tool: str, *, summary: str | None = None, timeout: float | None = None,
              journal_dir: str | os.PathLike[str] | None = None,
              ) -> Callable[[Callable[[Mapping[str, Any], str, str], Awaitable[R]]],
                            Callable[..., Awaitable[GatedResult[R]]]]:
        """See Client.gated: the same gate for an async function, whose
        calls are awaited (``await payout(run_id, step, effect)``). The
        journal is written in a thread, so the event loop does not wait on
        its fsync."""
        journal = _gated.journal_for(journal_dir)
        default_summary, default_timeout = summary, timeout

        def gate(fn: Callable[[Mapping[str, Any], str, str], Awaitable[R]]) -> Callable[..., Awaitable[GatedResult[R]]]:
            @functools.wraps(fn, updated=())
            async def call(run_id: str, step: int | str, effect: Mapping[str, Any], *, summary: str | None = None,
                           reason: str | None = None, requested_for: str | None = None,
                           idempotency_key: str | None = None, timeout: float | None = None) -> GatedResult[R]:
                req = await self.request(tool=tool, effect=effect, run_id=run_id, step=step,
                                         summary=summary if summary is not None else default_summary, reason=reason,
                                         requested_for=requested_for, idempotency_key=idempotency_key)
                if not req.decided or req.edited:
                    req = await self.wait_for_decision(req.id,
                                                       timeout=timeout if timeout is not None else default_timeout)
                _gated.check_approved(req)
                if not req.receipt:
                    raise _gated.not_agent_executed(req)
                if (outcome := _gated.recorded(req)) is not None:
                    journal.delete(req.key)
                    return _gated.finished(req, outcome, called=False)
                if (outcome := journal.read(req.key)) is not None:
                    return _gated.finished(await self._report(journal, req, outcome), outcome, called=False)
                try:
                    value = await fn(req.effect, req.receipt, req.key)  # the approved effect, as stored
                except Exception as e:
                    await asyncio.to_thread(journal.write, req.key, req.id, _gated.failed(e))
                    await self._report(journal, req, _gated.failed(e))
                    raise
                outcome = _gated.succeeded(value)
                await asyncio.to_thread(journal.write, req.key, req.id, outcome)
                return _gated.finished(await self._report(journal, req, outcome), outcome, called=True, value=value)

            del call.__wrapped__  # its signature is the call's, not fn's
            return call

        return gate

    async def _report(self, journal: _gated.Journal, req: Request, outcome: _gated.Outcome) -> Request:
        """See Client._report."""
        try:
            reported = await self.report_outcome(req.id, outcome.status, outcome.provider_ref, outcome.detail)
        except OutcomeConflictError:
            journal.delete(req.key)
            raise
        journal.delete(req.key)
        return calls.followed(reported, req.edited_from)

    async def tools(self) -> builtins.list[Tool]:
        """See Client.tools."""
        return await self._run(calls.tools())

    async def _run(self, call: Call[T]) -> T:
        return await self._transport.arun(call, time.monotonic() + self.retry_for)
