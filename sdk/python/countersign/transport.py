"""HTTP exchanges with countersign, and when one is sent again."""

from __future__ import annotations

import asyncio
import http.client
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from typing import Generic, TypeVar

from .errors import APIError, ConnectionError, ConnectionTimeoutError, InternalError, UnavailableError, error_from

#: The most of an answer that is read.
MAX_ANSWER_BYTES = 8 << 20

T = TypeVar("T")

#: What a call that may be sent again is sent again after: a network error
#: (ConnectionError) or an answer of 503 (UnavailableError); a read also
#: after a 500 (_pause).
RETRIED = (ConnectionError, UnavailableError)


@dataclass(frozen=True)
class Answer:
    """One HTTP answer below 400, read whole."""

    status: int
    headers: Message  # names are matched whatever their case
    body: bytes


@dataclass(frozen=True)
class Call(Generic[T]):
    """One call of the API: what is sent, whether it may be sent again, and
    how its answer is read. Client and AsyncClient run the same calls."""

    method: str
    path: str
    body: bytes | None
    read: Callable[[Answer], T]
    retry: bool = True
    hold: float = 0  # seconds a long-poll's answer may take on top


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # countersign never redirects an agent; a redirect is someone else's
    # answer, and following it would send the token elsewhere.
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


class Transport:
    """Sends calls to one countersign server as one agent.

    A call that may be sent again is, with the same bytes, after a network
    error (raised as ConnectionError, or ConnectionTimeoutError when the
    answer did not come in time) or a 503 (a read also after a 500),
    following a jittered exponential backoff, or the answer's Retry-After
    when that is longer, until its deadline would pass; then the last error
    is raised.
    """

    def __init__(self, url: str, token: str, user_agent: str, *, timeout: float,
                 first_backoff: float = 0.2, max_backoff: float = 5.0) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"the countersign URL must be an http or https URL, not {url!r}")
        self.base = url.rstrip("/")
        self.token = token
        self.user_agent = user_agent
        self.timeout = timeout
        self.first_backoff = first_backoff
        self.max_backoff = max_backoff
        self._opener = urllib.request.build_opener(_NoRedirect)

    def run(self, call: Call[T], deadline: float) -> T:
        """Run call, retrying until deadline (a time.monotonic() value)."""
        backoff = self.first_backoff
        while True:
            try:
                return call.read(self.exchange(call))
            except (ConnectionError, APIError) as e:
                pause = self._pause(call, e, backoff, deadline)
            time.sleep(pause)
            backoff = min(2 * backoff, self.max_backoff)

    async def arun(self, call: Call[T], deadline: float) -> T:
        """run() for asyncio: each exchange in a thread, the pauses awaited,
        so a cancelled task stops at the end of the exchange in flight."""
        backoff = self.first_backoff
        while True:
            try:
                return call.read(await asyncio.to_thread(self.exchange, call))
            except (ConnectionError, APIError) as e:
                pause = self._pause(call, e, backoff, deadline)
            await asyncio.sleep(pause)
            backoff = min(2 * backoff, self.max_backoff)

    def _pause(self, call: Call[T], error: Exception, backoff: float, deadline: float) -> float:
        """How long to wait before sending call again after error, or raise
        error when it is not to be sent again."""
        # A read changes nothing, so a 500 is worth asking again, as the Go
        # client does; a write's 500 is the caller's to judge.
        retried = isinstance(error, RETRIED) or (call.method == "GET" and isinstance(error, InternalError))
        if not call.retry or (isinstance(error, APIError) and not retried):
            raise error
        # Jitter spreads the retries of many agents after one outage; a
        # Retry-After the server sent is waited in full.
        pause = backoff / 2 + random.uniform(0, backoff / 2)
        if isinstance(error, APIError) and error.retry_after:
            pause = max(pause, error.retry_after)
        if time.monotonic() + pause > deadline:
            raise error
        return pause

    def exchange(self, call: Call[T]) -> Answer:
        """Send call once; an answer of 400 or more raises its APIError."""
        headers = {
            "Authorization": "Bearer " + self.token,
            "Accept": "application/json",
            "User-Agent": self.user_agent,
        }
        if call.body is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + call.path, data=call.body, headers=headers, method=call.method)
        timeout = self.timeout + call.hold
        try:
            with self._opener.open(req, timeout=timeout) as resp:
                return Answer(resp.status, resp.headers, resp.read(MAX_ANSWER_BYTES))
        except urllib.error.HTTPError as e:
            with e:
                raise error_from(e.code, e.headers, e.read(MAX_ANSWER_BYTES)) from None
        except (OSError, http.client.HTTPException) as e:
            # urllib's URLError wraps the socket's error as its reason.
            reason = e.reason if isinstance(e, urllib.error.URLError) and isinstance(e.reason, BaseException) else e
            what = f"countersign: {call.method} {call.path.split('?')[0]}"
            if isinstance(reason, TimeoutError):
                raise ConnectionTimeoutError(f"{what}: no answer within {timeout:g} s") from e
            raise ConnectionError(f"{what}: {reason}") from e
