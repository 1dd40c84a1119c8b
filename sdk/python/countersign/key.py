"""The intent key, computed offline exactly as countersign derives it."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from .canonical import canonical

#: Versions the key scheme; a new scheme gets a new prefix.
PREFIX = "wa_"

#: What a client key may hold besides ASCII letters and digits.
CLIENT_KEY_PUNCTUATION = "-_.:~/+="

_CLIENT_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789" + CLIENT_KEY_PUNCTUATION)
_CLIENT_KEY_RULE = ("the Idempotency-Key (header or idempotency_key) must be 8 to 255 characters, each a letter, a digit or "
                    "one of " + CLIENT_KEY_PUNCTUATION)


class InvalidKeyError(ValueError):
    """A client key countersign would refuse (422 ``invalid_request`` naming
    the Idempotency-Key); ``Client.request`` raises it before sending
    anything."""


def check_client_key(key: str, derived: str | None = None) -> None:
    """Raise InvalidKeyError unless countersign takes ``key`` as the client
    key (``idempotency_key``) of an intent whose key is ``derived``.

    A client key is 8 to 255 characters, each an ASCII letter, a digit or one
    of ``-_.:~/+=``: it is sent to the provider as a header, which an HTTP
    server may trim or fold, and it must arrive as the same string. One that
    begins with ``wa_``, in any letter case, must be ``derived`` itself: the
    prefix is the derived keys'. With ``derived`` None only the characters
    and the length are checked.
    """
    if not isinstance(key, str):
        raise TypeError(f"idempotency_key must be a str, not {type(key).__name__}")
    if not 8 <= len(key) <= 255:
        raise InvalidKeyError(f"{_CLIENT_KEY_RULE}; this one has {len(key)}")
    for i, c in enumerate(key):
        if c not in _CLIENT_KEY_CHARS:
            raise InvalidKeyError(f"{_CLIENT_KEY_RULE}; character {i + 1} (U+{ord(c):04X}) is not")
    if derived is not None and has_key_prefix(key) and key != derived:
        raise InvalidKeyError(f"an Idempotency-Key (header or idempotency_key) that begins with {PREFIX}, in any letter "
                              "case, must be the key this intent derives; send that key, none, or a key without the prefix")


def has_key_prefix(key: str) -> bool:
    """Whether key begins with the derived keys' prefix, in any letter case."""
    return key[:len(PREFIX)].lower() == PREFIX


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
