"""One HTTP call to countersign, resent after a network error or a 503."""

from __future__ import annotations

import http.client
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message

from .errors import APIError, error_from

#: The most of an answer that is read.
MAX_ANSWER_BYTES = 8 << 20


@dataclass(frozen=True)
class Answer:
    """One HTTP answer below 400, read whole."""

    status: int
    headers: Message  # names are matched whatever their case
    body: bytes


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # countersign never redirects an agent; a redirect is someone else's
    # answer, and following it would resend the token elsewhere.
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


class Transport:
    """Sends calls to one countersign server as one agent."""

    def __init__(self, url: str, token: str, user_agent: str, *, first_backoff: float = 0.2, max_backoff: float = 5.0,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError(f"the countersign URL must be an http or https URL, not {url!r}")
        self.base = url.rstrip("/")
        self.token = token
        self.user_agent = user_agent
        self.first_backoff = first_backoff
        self.max_backoff = max_backoff
        self.sleep = sleep
        self._opener = urllib.request.build_opener(_NoRedirect)

    def call(self, method: str, path: str, body: bytes | None, *, timeout: float, retry_until: float | None) -> Answer:
        """Send one call; an answer of 400 or more raises its APIError.

        With ``retry_until`` (a time.monotonic() deadline), a network error
        or a 503 is followed by the same bytes again, after a jittered
        backoff or the answer's Retry-After when longer, until the deadline
        would pass; then the last error is raised. Network errors are
        OSErrors (urllib.error.URLError, TimeoutError, ConnectionError).
        """
        backoff = self.first_backoff
        while True:
            try:
                status, headers, raw = self._once(method, path, body, timeout)
            except (OSError, http.client.HTTPException) as e:
                if retry_until is None:
                    raise
                error: Exception = e
                pause = backoff
            else:
                if status < 400:
                    return Answer(status, headers, raw)
                api_error = error_from(status, headers, raw)
                if retry_until is None or status != 503:
                    raise api_error
                error = api_error
                pause = backoff
            # Jitter spreads the retries of many agents after one outage;
            # a Retry-After the server sent is waited in full.
            pause = pause / 2 + random.uniform(0, pause / 2)
            if isinstance(error, APIError) and error.retry_after:
                pause = max(pause, error.retry_after)
            if time.monotonic() + pause > retry_until:
                raise error
            self.sleep(pause)
            backoff = min(2 * backoff, self.max_backoff)

    def _once(self, method: str, path: str, body: bytes | None, timeout: float) -> tuple[int, Message, bytes]:
        headers = {
            "Authorization": "Bearer " + self.token,
            "Accept": "application/json",
            "User-Agent": self.user_agent,
        }
        if body is not None:
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.base + path, data=body, headers=headers, method=method)
        try:
            with self._opener.open(req, timeout=timeout) as resp:
                return resp.status, resp.headers, resp.read(MAX_ANSWER_BYTES)
        except urllib.error.HTTPError as e:
            with e:
                return e.code, e.headers, e.read(MAX_ANSWER_BYTES)
