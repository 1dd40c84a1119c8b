"""The asyncio client: Client's calls, awaitable."""

from __future__ import annotations

import asyncio
import builtins
import math
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

from .client import POLL_WAIT, Client
from .errors import WaitTimeout
from .request import Page, Request, Tool


class AsyncClient:
    """Client's calls for asyncio code, with the same arguments, retries and
    errors.

    Each HTTP exchange runs in a thread of the event loop's default
    executor (asyncio.to_thread), since the standard library has no
    asynchronous HTTP client: a call holds a thread while it is in flight,
    and cancelling the awaiting task takes effect when that exchange ends.
    wait() polls one exchange at a time, so it can be cancelled between
    polls (at most 30 s apart) and holds no thread in between.
    """

    def __init__(self, url: str, token: str, *, timeout: float = 30.0, retry_for: float = 60.0) -> None:
        self._client = Client(url, token, timeout=timeout, retry_for=retry_for)

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
        return await asyncio.to_thread(
            self._client.request, tool=tool, effect=effect, run_id=run_id, step=step, summary=summary,
            reason=reason, requested_for=requested_for, idempotency_key=idempotency_key)

    async def get(self, ref: str) -> Request:
        """See Client.get."""
        return await asyncio.to_thread(self._client.get, ref)

    async def list_page(self, *, status: str | None = None, tool: str | None = None, run_id: str | None = None,
                        settled: bool | None = None, limit: int | None = None, cursor: str | None = None) -> Page:
        """See Client.list_page."""
        return await asyncio.to_thread(self._client.list_page, status=status, tool=tool, run_id=run_id,
                                       settled=settled, limit=limit, cursor=cursor)

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
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        req = await self.get(ref)
        while not req.settled:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise WaitTimeout(ref, req)
            req = await asyncio.to_thread(self._client._poll, ref, req.version, min(remaining, POLL_WAIT), deadline)
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
        return req if req.settled else await self.wait(req.id, timeout=timeout)

    async def cancel(self, ref: str) -> Request:
        """See Client.cancel."""
        return await asyncio.to_thread(self._client.cancel, ref)

    async def redrive(self, ref: str) -> Request:
        """See Client.redrive."""
        return await asyncio.to_thread(self._client.redrive, ref)

    async def tools(self) -> builtins.list[Tool]:
        """See Client.tools."""
        return await asyncio.to_thread(self._client.tools)
