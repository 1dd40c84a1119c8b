"""Checking the Countersign-Signature of a dispatch or a callback.

docs/CALLBACKS.md is the contract; in short::

    Countersign-Signature: t=<unix seconds>,v1=<hex>,v2=<hex>
    v1 = HMAC-SHA256(secret, t + "." + body)
    v2 = HMAC-SHA256(secret, t + "\\n" + method + "\\n" + path + "\\n"
                             + idempotency_key + "\\n" + delivery_id + "\\n" + body)

v2 also covers how the request was sent, so a captured body sent again under
another key, to another path or with another method does not verify. Check
v2; fall back to v1 only by policy (see the contract), never because v2 did
not match.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time

from .errors import SignatureError

#: The header that carries the signature.
HEADER = "Countersign-Signature"
#: How far, in seconds, a signature's time may be from now, either way.
DEFAULT_TOLERANCE = 300

_MAC = re.compile(r"[0-9a-f]{64}")


def verify_signature(
    secret: str | bytes,
    header: str,
    body: bytes,
    *,
    method: str | None = None,
    path: str | None = None,
    idempotency_key: str = "",
    delivery_id: str = "",
    tolerance: float = DEFAULT_TOLERANCE,
    now: float | None = None,
) -> None:
    """Check a Countersign-Signature header, or raise SignatureError.

    ``secret`` is the tool's dispatch secret (a dispatch) or the agent's
    callback secret (a callback), as configured: a str is its UTF-8 bytes,
    nothing trimmed or decoded. ``body`` is the raw body as received, every
    byte; verify before parsing it.

    With ``method`` and ``path`` (the request line's path exactly as sent:
    percent-encoding untouched, no query string), a v2 must match them, the
    ``idempotency_key`` (a dispatch's Idempotency-Key header) or the
    ``delivery_id`` (a callback's Countersign-Delivery header), and the body:
    the check a receiver should make. Without them, a v1 must match the body
    alone, which accepts the body sent again under another key or path
    within the tolerance: only for a receiver that cannot know how the
    request was sent. Either way the signature's time must be within
    ``tolerance`` seconds of ``now`` (default: the clock), and any of
    several signatures (a secret being rotated) may match. A receiver that
    accepts several secrets calls it once for each.
    """
    if (method is None) != (path is None):
        raise ValueError("give both method and path (to check v2), or neither (to check v1 only)")
    key = secret.encode("utf-8") if isinstance(secret, str) else bytes(secret)
    if not isinstance(body, (bytes, bytearray, memoryview)):
        raise TypeError("body must be the raw bytes received, not a re-serialisation")
    body = bytes(body)
    ts, v1, v2 = _parse(header, time.time() if now is None else now, tolerance)
    if method is None or path is None:
        signed, candidates = ts.encode() + b"." + body, v1
    else:
        parts = (ts, method, path, idempotency_key, delivery_id)
        if any("\n" in p for p in parts):
            raise SignatureError("bad countersign signature")
        signed, candidates = ("\n".join(parts) + "\n").encode("utf-8") + body, v2
    want = hmac.new(key, signed, hashlib.sha256).hexdigest()
    matched = False
    for candidate in candidates:
        # Every value is compared, so the time taken says nothing of which matched.
        matched |= hmac.compare_digest(candidate, want)
    if not matched:
        raise SignatureError("bad countersign signature")


def _parse(header: str, now: float, tolerance: float) -> tuple[str, list[str], list[str]]:
    ts: str | None = None
    v1: list[str] = []
    v2: list[str] = []
    for part in header.split(","):
        name, sep, value = part.strip(" \t").partition("=")
        if not sep:
            raise SignatureError("bad countersign signature")
        if name == "t":
            if ts is not None:
                raise SignatureError("bad countersign signature")
            ts = value
        elif name in ("v1", "v2") and _MAC.fullmatch(value):
            (v1 if name == "v1" else v2).append(value)
    if ts is None or not (ts.isascii() and ts.isdigit()) or abs(now - int(ts)) > tolerance:
        raise SignatureError("bad countersign signature")
    return ts, v1, v2
