"""Gated functions: a write of an agent-executed tool that the agent makes
itself, once approved, and whose outcome it reports (docs/RECEIPTS.md).

``Client.gated`` and ``AsyncClient.gated`` wrap a function that performs the
write; this module holds what they share: the outcome a function's return
value reports, the result of a gated call, and the journal that keeps an
outcome on disk between the function's return and its report, so a process
that crashed in between reports it on the next call instead of writing
again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from .errors import CountersignError, NotApprovedError, RejectedError, WriteFailedError
from .request import Request

#: The journal's directory when a gated function names none, under the
#: working directory when the function is gated.
DEFAULT_JOURNAL_DIR = ".countersign-outcomes"

#: The longest provider_ref or detail countersign keeps, in UTF-8 bytes;
#: longer ones are cut to it before they are reported.
MAX_OUTCOME_FIELD = 4096

R = TypeVar("R")


@dataclass(frozen=True)
class Outcome:
    """What an agent reports of a write it made: ``status`` succeeded or
    failed, the provider's reference for it, and a detail for a person."""

    status: str
    provider_ref: str | None = None
    detail: str | None = None


@dataclass(frozen=True)
class GatedResult(Generic[R]):
    """What a gated call returns once the write's outcome is recorded:
    ``request``, the request as countersign holds it after the report;
    ``outcome``, the outcome recorded; ``called``, whether this call ran the
    function; ``value``, what the function returned (None when it was not
    called: the outcome was already recorded, on the server or in the
    journal)."""

    request: Request
    outcome: Outcome
    called: bool
    value: R | None = None


def _cut(text: str | None) -> str | None:
    if text is None:
        return None
    data = text.encode("utf-8")
    if len(data) <= MAX_OUTCOME_FIELD:
        return text
    return data[:MAX_OUTCOME_FIELD].decode("utf-8", "ignore")


def succeeded(value: Any) -> Outcome:
    """The outcome a gated function's return value reports: a str is the
    provider's reference for the write; a mapping's ``provider_ref`` and
    ``detail`` (when present) are reported as they are; anything else
    reports neither."""
    provider_ref = detail = None
    if isinstance(value, str):
        provider_ref = value
    elif isinstance(value, Mapping):
        provider_ref, detail = value.get("provider_ref"), value.get("detail")
    provider_ref = None if provider_ref is None else str(provider_ref)
    detail = None if detail is None else str(detail)
    return Outcome("succeeded", _cut(provider_ref), _cut(detail))


def failed(error: BaseException) -> Outcome:
    """The outcome of a gated function that raised: failed, with the
    exception's message (its type's name when it has none)."""
    return Outcome("failed", None, _cut(str(error) or type(error).__name__))


def check_approved(req: Request) -> None:
    """Raise RejectedError or NotApprovedError unless req was approved."""
    if req.status == "approved":
        return
    if req.status == "rejected":
        raise RejectedError(req)
    raise NotApprovedError(req)


def recorded(req: Request) -> Outcome | None:
    """The outcome countersign holds for req's write, if one is recorded."""
    e = req.execution
    if e is None or e.state not in ("succeeded", "failed"):
        return None
    return Outcome(e.state, e.provider_ref)


def finished(req: Request, outcome: Outcome, called: bool, value: Any = None) -> GatedResult[Any]:
    """The result of a gated call whose outcome is recorded; an outcome
    recorded as failed by an earlier call raises WriteFailedError."""
    if outcome.status == "failed" and not called:
        raise WriteFailedError(req, outcome.provider_ref, outcome.detail)
    return GatedResult(req, outcome, called, value)


def not_agent_executed(req: Request) -> CountersignError:
    return CountersignError(f"countersign: {req.tool} is not an agent-executed tool (its approved request {req.id} "
                            "carries no receipt): countersign sends its writes, so request() it instead of gating it")


class Journal:
    """Outcomes a gated function returned that countersign may not have
    recorded yet: one file per key in ``directory``, written atomically
    (a temporary file, fsync, rename, and the directory's fsync) before the
    outcome is reported, and deleted once it is. A process that crashed in
    between finds the outcome here on its next call with the key, and
    reports it without calling the function again."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def path(self, key: str) -> Path:
        # A client key may hold / and :, so the file is named by its digest.
        return self.directory / (hashlib.sha256(key.encode("utf-8")).hexdigest() + ".json")

    def read(self, key: str) -> Outcome | None:
        """The outcome kept for key, or None. An entry that cannot be read
        raises ValueError: calling the function again could write twice."""
        try:
            text = self.path(key).read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        entry = json.loads(text)
        if entry.get("key") != key or entry.get("status") not in ("succeeded", "failed"):
            raise ValueError(f"countersign: the outcome journal's {self.path(key)} is not an outcome of {key}")
        return Outcome(entry["status"], entry.get("provider_ref"), entry.get("detail"))

    def write(self, key: str, ref: str, outcome: Outcome) -> None:
        """Keep outcome for key, durably, before it is reported."""
        self.directory.mkdir(parents=True, exist_ok=True)
        entry = {"key": key, "ref": ref, "status": outcome.status, "provider_ref": outcome.provider_ref,
                 "detail": outcome.detail}
        target = self.path(key)
        fd, temp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=self.directory)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, target)
        except BaseException:
            try:
                os.unlink(temp)
            except FileNotFoundError:
                pass
            raise
        self._sync_directory()

    def delete(self, key: str) -> None:
        """Forget key's outcome, once countersign recorded it."""
        try:
            self.path(key).unlink()
        except FileNotFoundError:
            pass

    def _sync_directory(self) -> None:
        # The rename is durable once the directory is; Windows cannot open
        # a directory, and its rename is.
        if os.name != "posix":
            return
        fd = os.open(self.directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def journal_for(journal_dir: str | os.PathLike[str] | None) -> Journal:
    """The journal in journal_dir, or DEFAULT_JOURNAL_DIR under the working
    directory, fixed now."""
    return Journal(Path(journal_dir if journal_dir is not None else DEFAULT_JOURNAL_DIR).absolute())
