"""The client an agent calls countersign with."""

from __future__ import annotations

import builtins
import functools
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from . import calls, gated as _gated
from .errors import OutcomeConflictError, WaitTimeout
from .gated import GatedResult
from .request import Page, Request, Tool
from .transport import RETRIED, Call, T, Transport
from .version import __version__

R = TypeVar("R")


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
        waits for a person (needs_review) is not settled. A request a
        reviewer edited (status edited) never runs: the wait follows its
        superseded_by to the edit and returns the edit once settled, with
        ``edited_from`` naming the keys it followed (at most
        calls.MAX_EDIT_HOPS edits; past them it returns the edited request
        as it is)."""
        return self._wait(ref, timeout, lambda req: req.settled)

    def wait_for_decision(self, ref: str, timeout: float | None = None) -> Request:
        """Return the request named by ref once it is decided: approved
        (with its ``receipt`` when its tool is agent-executed), rejected,
        expired or cancelled, whatever became of its write. Waits as wait()
        does, follows a reviewer's edit as it does, and raises WaitTimeout
        as it does."""
        return self._wait(ref, timeout, lambda req: req.decided)

    def _wait(self, ref: str, timeout: float | None, done: Callable[[Request], bool]) -> Request:
        deadline = math.inf if timeout is None else time.monotonic() + timeout
        # A request a reviewer edited never runs: the wait goes on with the
        # edit (superseded_by), a few edits at most, within the one timeout.
        req = self._wait_one(ref, deadline, done)
        edited_from: list[str] = []
        while req.edited and req.superseded_by and len(edited_from) < calls.MAX_EDIT_HOPS:
            edited_from.append(req.key)
            req = self._wait_one(req.superseded_by, deadline, done)
        return calls.followed(req, edited_from)

    def _wait_one(self, ref: str, deadline: float, done: Callable[[Request], bool]) -> Request:
        # A plain read first: a request already done needs no poll, and its
        # version is where the first poll starts.
        req: Request | None = None
        try:
            req = self._transport.run(calls.get(ref), deadline)
            while not done(req) and (remaining := deadline - time.monotonic()) >= calls.MIN_POLL:
                req = self._transport.run(calls.poll(ref, req.version, remaining), deadline)
        except RETRIED as e:
            # Retries end only at the deadline: the wait is over.
            raise WaitTimeout(ref, req) from e
        if not done(req):
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
        return req if req.settled and not req.edited else self.wait(req.id, timeout=timeout)

    def cancel(self, ref: str) -> Request:
        """Withdraw a pending request; one no longer pending raises
        AlreadyDecidedError. Sent once."""
        return self._run(calls.cancel(ref))

    def redrive(self, ref: str) -> Request:
        """Send the request's newest callback again, due at once; raises
        CallbackNotConfiguredError or NothingToRedriveError when there is
        none. Sent once."""
        return self._run(calls.redrive(ref))

    def report_outcome(self, ref: str, status: str, provider_ref: str | None = None,
                       detail: str | None = None) -> Request:
        """Report how the write of an approved request of an agent-executed
        tool went: ``status`` succeeded or failed, with the provider's
        reference and a detail for a person (each at most 4096 bytes).
        Returns the request as recorded. The same report again records
        nothing new, so it is resent after a network error; another report
        raises OutcomeConflictError, and a request that awaits none (not
        approved, or countersign sends its tool's writes)
        NotAgentExecutedError."""
        return self._run(calls.outcome(ref, status, provider_ref, detail))

    def gated(self, tool: str, *, summary: str | None = None, timeout: float | None = None,
              journal_dir: str | os.PathLike[str] | None = None,
              ) -> Callable[[Callable[[Mapping[str, Any], str, str], R]], Callable[..., GatedResult[R]]]:
        """Gate a function that makes a write of the agent-executed ``tool``
        itself::

            @client.gated("billing.payout")
            def payout(effect, receipt, key):
                return bank.pay(effect, headers={"Idempotency-Key": key, "Countersign-Receipt": receipt}).id

            result = payout("r-7f3a", 6, {"vendor": "v_12", "amount_cents": 4200}, summary="Pay v_12 42.00")

        Calling it as ``payout(run_id, step, effect, *, summary=None,
        reason=None, requested_for=None, idempotency_key=None,
        timeout=None)`` requests the write as request() does (the key from
        the run, the step, the tool and the effect), waits for the decision
        (``timeout`` seconds, the gate's by default, else as long as it
        takes: WaitTimeout), and once approved calls the function with the
        effect, the request's receipt and its key, then reports the
        outcome and returns a GatedResult. The function's return value is
        ``GatedResult.value``; a str return is reported as the provider's
        reference, a mapping's ``provider_ref`` and ``detail`` keys as they
        are. An exception is reported failed, with its message, and raised
        again. A rejection raises RejectedError (``reason``, ``retry``); an
        expiry or a cancellation NotApprovedError, the function uncalled.
        A request a reviewer edited and approved is followed to the edit:
        the function is called with the edit's effect (the reviewer's, not
        the one asked for), its receipt and its key, the outcome is
        reported on the edit, and ``GatedResult.request.edited_from`` names
        the original; the original is never written.

        The function is called at most once per key once it returned: its
        outcome is written to a journal (``journal_dir``, by default
        .countersign-outcomes under the working directory) before it is
        reported, and deleted after. A later call with the same key returns
        the outcome countersign recorded, or reports the journal's, without
        calling the function (an outcome recorded as failed raises
        WriteFailedError). When the report cannot be sent, its error is
        raised and the journal keeps the outcome for the next call. One
        caller at a time per key: two calling at once may both run it.
        """
        journal = _gated.journal_for(journal_dir)
        default_summary, default_timeout = summary, timeout

        def gate(fn: Callable[[Mapping[str, Any], str, str], R]) -> Callable[..., GatedResult[R]]:
            @functools.wraps(fn, updated=())
            def call(run_id: str, step: int | str, effect: Mapping[str, Any], *, summary: str | None = None,
                     reason: str | None = None, requested_for: str | None = None,
                     idempotency_key: str | None = None, timeout: float | None = None) -> GatedResult[R]:
                req = self.request(tool=tool, effect=effect, run_id=run_id, step=step,
                                   summary=summary if summary is not None else default_summary, reason=reason,
                                   requested_for=requested_for, idempotency_key=idempotency_key)
                if not req.decided or req.edited:
                    req = self.wait_for_decision(req.id, timeout=timeout if timeout is not None else default_timeout)
                _gated.check_approved(req)
                if not req.receipt:
                    raise _gated.not_agent_executed(req)
                if (outcome := _gated.recorded(req)) is not None:
                    journal.delete(req.key)
                    return _gated.finished(req, outcome, called=False)
                if (outcome := journal.read(req.key)) is not None:
                    return _gated.finished(self._report(journal, req, outcome), outcome, called=False)
                try:
                    value = fn(req.effect, req.receipt, req.key)  # the approved effect, as stored
                except Exception as e:
                    journal.write(req.key, req.id, _gated.failed(e))
                    self._report(journal, req, _gated.failed(e))
                    raise
                outcome = _gated.succeeded(value)
                journal.write(req.key, req.id, outcome)
                return _gated.finished(self._report(journal, req, outcome), outcome, called=True, value=value)

            del call.__wrapped__  # its signature is the call's, not fn's
            return call

        return gate

    def _report(self, journal: _gated.Journal, req: Request, outcome: _gated.Outcome) -> Request:
        """Report the journal's outcome for req, then forget it. A conflict
        (another outcome is recorded) forgets it too: the first stands."""
        try:
            reported = self.report_outcome(req.id, outcome.status, outcome.provider_ref, outcome.detail)
        except OutcomeConflictError:
            journal.delete(req.key)
            raise
        journal.delete(req.key)
        return calls.followed(reported, req.edited_from)

    def tools(self) -> builtins.list[Tool]:
        """Return the tools this agent may request."""
        return self._run(calls.tools())

    def _run(self, call: Call[T]) -> T:
        return self._transport.run(call, time.monotonic() + self.retry_for)
