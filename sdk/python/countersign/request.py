"""Requests and tools as countersign represents them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

_TIME = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:([Zz])|([+-])(\d\d):(\d\d))")


def parse_time(text: str) -> datetime:
    """Read an RFC 3339 time as the server writes it (nanoseconds are cut
    to the microseconds a datetime holds)."""
    m = _TIME.fullmatch(text)
    if m is None:
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.group(1, 2, 3, 4, 5, 6))
    micro = int((m.group(7) or "0")[:6].ljust(6, "0"))
    tz = timezone.utc
    if m.group(9):
        offset = timedelta(hours=int(m.group(10)), minutes=int(m.group(11)))
        tz = timezone(offset if m.group(9) == "+" else -offset)
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=tz)


@dataclass(frozen=True)
class Decision:
    """The standing decision of the request's latest decided round."""

    verdict: str  # approve or reject
    by: str  # a reviewer; policy:<rule> or grant:<id> for a decision made on arrival
    at: datetime
    via: str  # slack, inbox, …; policy or grant for a decision made on arrival
    round: int
    reason: str = ""
    #: On a reject, what it means for an agent that would try again (a new
    #: step asks again; the same intent gets the same rejection); "" on an
    #: approval.
    retry: str = ""

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Decision:
        return cls(d["verdict"], d["by"], parse_time(d["at"]), d["via"], d["round"], d.get("reason", ""),
                   d.get("retry", ""))


@dataclass(frozen=True)
class Response:
    """The provider's last answer: its status, and its JSON body (or the
    body as a string when it was not JSON)."""

    status: int
    body: Any


@dataclass(frozen=True)
class Execution:
    """The request's latest execution (docs/STATES.md)."""

    state: str  # ready, claimed, succeeded, failed, unknown, needs_review, superseded
    attempts: int
    code: str | None = None
    provider_ref: str | None = None
    response: Response | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Execution:
        r = d.get("response")
        return cls(d["state"], d["attempts"], d.get("code"), d.get("provider_ref"),
                   Response(r["status"], r.get("body")) if r else None)


@dataclass(frozen=True)
class Callback:
    """Where the request's newest callback delivery stands."""

    state: str  # pending, delivered, failed; delivering in a callback's own body
    attempts: int
    last_status: int | None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Callback:
        return cls(d["state"], d["attempts"], d.get("last_status"))


@dataclass(frozen=True)
class RequestPolicy:
    """How the request's rounds are decided, frozen when it was stored."""

    approvals: int  # 0 when the policy decided alone
    approvers: tuple[str, ...]
    tier: int | None  # the index of the tool's tier that matched, or None
    #: allow (approved by policy, no one asked), deny (refused by policy:
    #: the post raised DeniedByPolicyError) or ask (reviewers decide).
    verdict: str = "ask"
    #: The rule that decided: a tier's name, or "default" for the tool's own.
    tier_name: str = ""
    #: The digest of the tool's rules when the request arrived (sha256:…).
    version: str = ""

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RequestPolicy:
        return cls(d["approvals"], tuple(d["approvers"]), d.get("tier"), d.get("verdict") or "ask",
                   d.get("tier_name", ""), d.get("version", ""))


@dataclass(frozen=True)
class Vote:
    """One vote of the current round."""

    by: str
    verdict: str
    at: datetime
    reason: str

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Vote:
        return cls(d["by"], d["verdict"], parse_time(d["at"]), d.get("reason", ""))


@dataclass(frozen=True)
class Request:
    """A request as GET /v1/requests/{ref} represents it."""

    id: str
    key: str
    key_short: str
    status: str  # pending, approved, rejected, expired, cancelled, edited
    round: int
    run_id: str
    step: int | str
    tool: str
    effect: dict[str, Any]
    summary: str
    reason: str
    requested_by: str
    requested_for: str | None
    payload_hash: str
    created_at: datetime
    expires_at: datetime
    decision: Decision | None
    execution: Execution | None
    #: True once the outcome can no longer change: rejected, expired,
    #: cancelled, or an execution that succeeded or failed.
    settled: bool
    #: Grows with every change; wait() long-polls from it.
    version: int
    callback: Callback | None
    policy: RequestPolicy | None
    votes: tuple[Vote, ...] = ()
    #: The signed receipt of an approved write of an agent-executed tool (a
    #: compact JWS, countersign.receipt): the agent sends it to its provider
    #: in Countersign-Receipt with the write. None otherwise.
    receipt: str | None = None
    #: When the status is edited: the key of the request a reviewer's edit
    #: replaced this one with (its effect changed, its own key). This
    #: request never runs; wait() and wait_for_decision() follow it.
    superseded_by: str | None = None
    #: On a reviewer's edit: the key of the request it replaced.
    supersedes: str | None = None
    #: True when request() found the key already stored (200 with
    #: Idempotent-Replayed) rather than creating it (201).
    replayed: bool = field(default=False, compare=False)
    #: The keys of the edited requests a wait followed to reach this one
    #: (through superseded_by), the one waited for first; empty when none
    #: was edited.
    edited_from: tuple[str, ...] = field(default=(), compare=False)

    @property
    def edited(self) -> bool:
        """Whether a reviewer's edit replaced this request (status edited):
        superseded_by names the edit."""
        return self.status == "edited"

    @property
    def decided(self) -> bool:
        """Whether the review is over: approved, rejected, expired,
        cancelled or edited (wait_for_decision() waits for this)."""
        return self.status != "pending"

    @property
    def succeeded(self) -> bool:
        """Whether the write happened."""
        return self.execution is not None and self.execution.state == "succeeded"

    @classmethod
    def from_json(cls, d: dict[str, Any], replayed: bool = False) -> Request:
        def maybe(kind: Any, name: str) -> Any:
            value = d.get(name)
            return kind.from_json(value) if value is not None else None

        return cls(
            id=d["id"], key=d["key"], key_short=d["key_short"], status=d["status"], round=d["round"],
            run_id=d["run_id"], step=d["step"], tool=d["tool"], effect=d["effect"],
            summary=d.get("summary", ""), reason=d.get("reason", ""), requested_by=d["requested_by"],
            requested_for=d.get("requested_for"), payload_hash=d["payload_hash"],
            created_at=parse_time(d["created_at"]), expires_at=parse_time(d["expires_at"]),
            decision=maybe(Decision, "decision"), execution=maybe(Execution, "execution"),
            settled=d["settled"], version=d["version"], callback=maybe(Callback, "callback"),
            policy=maybe(RequestPolicy, "policy"), votes=tuple(Vote.from_json(v) for v in d.get("votes") or ()),
            receipt=d.get("receipt") or None, superseded_by=d.get("superseded_by") or None,
            supersedes=d.get("supersedes") or None, replayed=replayed,
        )


@dataclass(frozen=True)
class Page:
    """One page of GET /v1/requests: the requests, newest first, and the
    cursor of the next page (None on the last)."""

    data: tuple[Request, ...]
    next_cursor: str | None


@dataclass(frozen=True)
class Policy:
    """A tool's approval policy."""

    approvals: int
    approvers: tuple[str, ...]


@dataclass(frozen=True)
class Tool:
    """A tool this agent may request."""

    name: str
    reversible: bool
    policy: Policy
    description: str = ""
    #: The JSON Schema (2020-12) an effect must satisfy, if the tool has one.
    effect_schema: dict[str, Any] | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Tool:
        p = d["policy"]
        return cls(d["name"], d["reversible"], Policy(p["approvals"], tuple(p["approvers"])),
                   d.get("description", ""), d.get("effect_schema"))
