"""The intent key, computed offline exactly as countersign derives it."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from .canonical import canonical

#: Versions the key scheme; a new scheme gets a new prefix.
PREFIX = "wa_"


def intent_key(run_id: str, step: int | str, tool: str, effect: Mapping[str, Any]) -> str:
    """Return the key countersign stores for this intent, without asking it.

    The key is ``"wa_"`` + the hex SHA-256 of the RFC 8785 form of
    ``{"run": run_id, "step": step, "tool": tool, "effect": effect}``. The
    summary, reason and requested_for never enter it. ``step`` is used as
    given: 6 and "6" are different steps. Numbers follow the rules in
    ``countersign.canonical``: a ``NumberError`` (a ``ValueError``) names, by
    its JSON Pointer, a number the server would refuse with 422
    ``invalid_request``.
    """
    if not isinstance(run_id, str) or not run_id.strip():
        raise ValueError("run_id must be a non-empty string")
    if not isinstance(tool, str) or not tool.strip():
        raise ValueError("tool must be a non-empty string")
    if isinstance(step, bool) or not isinstance(step, (int, str)):
        raise TypeError(f"step must be an int or a str, not {type(step).__name__}")
    if isinstance(step, str) and not step.strip():
        raise ValueError("step must not be an empty string")
    if not isinstance(effect, Mapping):
        raise TypeError(f"effect must be a mapping (a JSON object), not {type(effect).__name__}")
    # In the order the body is sent, so a refusal names what the server
    # would; RFC 8785 then orders the members by name: effect, run, step, tool.
    run, step_, tool_, effect_ = (canonical(run_id, "/run_id"), canonical(step, "/step"),
                                  canonical(tool, "/tool"), canonical(effect, "/effect"))
    basis = '{"effect":' + effect_ + ',"run":' + run + ',"step":' + step_ + ',"tool":' + tool_ + "}"
    return PREFIX + hashlib.sha256(basis.encode("utf-8")).hexdigest()
