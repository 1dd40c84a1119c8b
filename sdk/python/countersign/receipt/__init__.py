"""Approval receipts: check, at a provider, that countersign approved a write.

Once a write of an agent-executed tool is approved, countersign gives the
agent a receipt: a compact JWS (RFC 7515) signed with Ed25519 (``alg``
EdDSA, RFC 8037, header ``typ`` countersign-receipt+jwt) whose claims name
the request's key, its tool, its agent, the SHA-256 of the approved
effect's RFC 8785 form, who decided and how, and until when it holds
(docs/RECEIPTS.md). The agent sends it with the write in
``Countersign-Receipt``; the provider checks it against countersign's public
keys (``GET /.well-known/jwks.json``), so it can refuse any write nobody
approved without sharing a secret with countersign::

    from countersign.receipt import ReceiptError, fetch_verifier

    verifier = fetch_verifier("https://countersign.example/.well-known/jwks.json")
    try:
        claims = verifier.verify_request(headers, body, "billing.payout")
    except ReceiptError as e:
        refuse(403, e.code)   # missing, malformed, unknown_key, signature, expired, other_key, other_tool, effect

It checks what Go's package receipt checks, in the same order, and answers
the shared vectors (receipt/testdata/vectors.json) as it does. The standard
library only: the Ed25519 check is this package's (``ed25519``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..canonical import canonical_text
from ..errors import CountersignError
from . import ed25519

#: The HTTP header an agent sends a receipt in.
HEADER = "Countersign-Receipt"
#: The JWS algorithm of every receipt (RFC 8037).
ALG = "EdDSA"
#: The typ header of every receipt, so a receipt is never taken for another
#: JWT signed with the same key.
TYPE = "countersign-receipt+jwt"

__all__ = [
    "ALG", "HEADER", "TYPE", "EffectError", "ExpiredError", "JWKSError", "MalformedError", "MissingError",
    "OtherKeyError", "OtherToolError", "REFUSALS", "ReceiptClaims", "ReceiptError", "ReceiptSignatureError",
    "ReceiptVerifier", "UnknownKeyError", "effect_digest", "fetch_verifier",
]


@dataclass(frozen=True)
class ReceiptClaims:
    """What a receipt asserts: which write was approved (key, tool, agent,
    and effect_sha256, the lowercase hex SHA-256 of the approved effect's
    RFC 8785 form), who decided it (decided_by: a reviewer,
    ``policy:<tier>`` or ``grant:<id>``) and how (via: human, policy or
    grant), under which policy, when (iat) and until when a provider takes
    it (exp), in seconds since the Unix epoch."""

    key: str
    tool: str
    agent: str
    effect_sha256: str
    decided_by: str
    via: str
    policy_version: str
    iat: int
    exp: int

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ReceiptClaims:
        """Read the claims as Go's receipt.Claims does: a field that is
        absent is its zero value; one of the wrong type is refused
        (ValueError)."""
        text = {name: d.get(name, "") for name in
                ("key", "tool", "agent", "effect_sha256", "decided_by", "via", "policy_version")}
        times = {name: d.get(name, 0) for name in ("iat", "exp")}
        for name, value in text.items():
            if not isinstance(value, str):
                raise ValueError(f"claim {name} is not a string")
        for name, value in times.items():
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"claim {name} is not an integer")
        return cls(**text, **times)

    def to_json(self) -> dict[str, Any]:
        """The claims as the receipt's payload holds them."""
        return asdict(self)


class ReceiptError(CountersignError):
    """Why a verifier refused a receipt. ``code`` is the refusal, stable
    across languages (the vectors' error names, Go's ErrMissing … ErrEffect):
    missing, malformed, unknown_key, signature, expired, other_key,
    other_tool, effect. ``claims`` are the receipt's when its signature
    held (expired, other_key, other_tool, effect), else None."""

    code: str = ""
    #: The sentence Go's sentinel error says.
    text: str = ""

    def __init__(self, detail: str = "", claims: ReceiptClaims | None = None) -> None:
        self.claims = claims
        self.detail = detail
        super().__init__(f"{self.text}: {detail}" if detail else self.text)


class MissingError(ReceiptError):
    """No receipt was sent (Go's ErrMissing)."""

    code = "missing"
    text = "receipt: none was sent"


class MalformedError(ReceiptError):
    """Not a compact JWS countersign signs: not three base64url parts, a
    header that is not ``{"alg": "EdDSA", "typ": "countersign-receipt+jwt"}``
    with a kid, or claims that cannot be read (Go's ErrMalformed)."""

    code = "malformed"
    text = "receipt: not a compact JWS countersign signs"


class UnknownKeyError(ReceiptError):
    """Signed by a key the JWKS does not hold (Go's ErrUnknownKey): fetch
    the JWKS again after a rotation."""

    code = "unknown_key"
    text = "receipt: signed by a key the JWKS does not hold"


class ReceiptSignatureError(ReceiptError):
    """The signature does not match (Go's ErrSignature)."""

    code = "signature"
    text = "receipt: the signature does not match"


class ExpiredError(ReceiptError):
    """Past its exp, and the verifier's leeway (Go's ErrExpired)."""

    code = "expired"
    text = "receipt: expired"


class OtherKeyError(ReceiptError):
    """Approves a request with another key than the write's
    Idempotency-Key (Go's ErrOtherKey)."""

    code = "other_key"
    text = "receipt: approves a request with another key"


class OtherToolError(ReceiptError):
    """Approves a write of another tool (Go's ErrOtherTool)."""

    code = "other_tool"
    text = "receipt: approves a write of another tool"


class EffectError(ReceiptError):
    """The body is not the approved effect: its RFC 8785 digest is not the
    receipt's effect_sha256, or it is not one JSON value (Go's ErrEffect)."""

    code = "effect"
    text = "receipt: the body is not the approved effect"


#: The class of each refusal code.
REFUSALS: Mapping[str, type[ReceiptError]] = {
    cls.code: cls for cls in (MissingError, MalformedError, UnknownKeyError, ReceiptSignatureError, ExpiredError,
                              OtherKeyError, OtherToolError, EffectError)
}


class JWKSError(CountersignError, ValueError):
    """A JWKS document a verifier cannot be built from: not JSON, an
    Ed25519 key whose x is not 32 bytes, or no Ed25519 key at all."""


def _b64decode(part: str) -> bytes:
    """base64url without padding, as RFC 7515 writes it (Go's
    base64.RawURLEncoding)."""
    if "=" in part or len(part) % 4 == 1:
        raise ValueError("not unpadded base64url")
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def _b64_value(data: str) -> bytes:
    """base64url text, refusing any character outside its alphabet."""
    if not all(c.isascii() and (c.isalnum() or c in "-_") for c in data):
        raise ValueError("not base64url")
    return _b64decode(data)


def effect_digest(body: bytes | str) -> str:
    """The lowercase hex SHA-256 of a JSON text's RFC 8785 form: what
    effect_sha256 holds for the effect a provider received. Raises
    ValueError for a body that is not one JSON value."""
    return hashlib.sha256(canonical_text(body).encode("utf-8")).hexdigest()


class ReceiptVerifier:
    """Checks receipts against countersign's public keys.

    ``jwks`` is the JWKS document (``GET /.well-known/jwks.json``, bytes,
    text or its parsed mapping); keys that are not Ed25519 are passed over.
    ``now`` is the clock expiry is checked against (seconds since the
    epoch; None is time.time); ``leeway`` is how many seconds past its
    expiry a receipt is still taken, for clocks apart. Raises JWKSError when
    the document holds no Ed25519 key or a malformed one.
    """

    def __init__(self, jwks: bytes | str | Mapping[str, Any], now: Callable[[], float] | None = None,
                 leeway: float = 0) -> None:
        try:
            doc = jwks if isinstance(jwks, Mapping) else json.loads(jwks)
            listed = doc.get("keys") if isinstance(doc, Mapping) else None
        except ValueError as e:
            raise JWKSError(f"receipt: JWKS: {e}") from e
        if listed is not None and not isinstance(listed, list):
            raise JWKSError("receipt: JWKS: keys is not a list")
        self.keys: dict[str, bytes] = {}
        for k in listed or ():
            if not isinstance(k, Mapping) or k.get("kty") != "OKP" or k.get("crv") != "Ed25519":
                continue
            kid = k.get("kid", "")
            try:
                x = _b64_value(k.get("x", ""))
            except (ValueError, TypeError, binascii.Error):
                x = b""
            if len(x) != ed25519.PUBLIC_KEY_SIZE or not isinstance(kid, str):
                raise JWKSError(f"receipt: JWKS: key {kid!r}: x is not an Ed25519 public key")
            self.keys[kid] = x
        if not self.keys:
            raise JWKSError("receipt: JWKS: no Ed25519 key")
        self.now = now
        self.leeway = leeway

    def verify(self, receipt: str, *, key: str = "", tool: str = "", body: bytes | str) -> ReceiptClaims:
        """Check receipt's signature and expiry, that it approves the write
        with this Idempotency-Key (``key``; "" does not check it) of this
        tool (``tool``; "" does not check it), and that the RFC 8785 digest
        of ``body``, the write's body, is its effect_sha256. Return its
        claims, or raise the ReceiptError that says why not."""
        claims = self.parse(receipt)
        if key and claims.key != key:
            raise OtherKeyError(claims=claims)
        if tool and claims.tool != tool:
            raise OtherToolError(claims=claims)
        try:
            digest = effect_digest(body)
        except ValueError as e:
            raise EffectError(f"the body is not one JSON value: {e}", claims) from None
        if digest != claims.effect_sha256:
            raise EffectError(claims=claims)
        return claims

    def verify_request(self, headers: Mapping[str, str] | Any, body: bytes | str, tool: str) -> ReceiptClaims:
        """Check the receipt of an HTTP write: its Countersign-Receipt
        against its Idempotency-Key and body. ``headers`` is anything with
        ``get`` (an email.message.Message, as http.server and urllib give,
        matches names whatever their case; with a plain dict, name them as
        sent)."""
        token = (headers.get(HEADER) or "").strip()
        if not token:
            raise MissingError()
        return self.verify(token, key=headers.get("Idempotency-Key") or "", tool=tool, body=body)

    def parse(self, receipt: str) -> ReceiptClaims:
        """Check receipt's signature and expiry and return its claims,
        without comparing them with a write."""
        if not receipt:
            raise MissingError()
        parts = receipt.split(".")
        if len(parts) != 3:
            raise MalformedError("not three parts")
        try:
            header = json.loads(_b64_value(parts[0]))
        except (ValueError, binascii.Error):
            raise MalformedError("the header is not base64url JSON") from None
        if not isinstance(header, dict) or header.get("alg") != ALG or header.get("typ") != TYPE:
            raise MalformedError(f"the header must say alg {ALG} and typ {TYPE}")
        kid = header.get("kid", "")
        public_key = self.keys.get(kid) if isinstance(kid, str) else None
        if public_key is None:
            raise UnknownKeyError(f"kid {kid!r}")
        try:
            signature = _b64_value(parts[2])
        except (ValueError, binascii.Error):
            raise MalformedError("the signature is not base64url") from None
        if not ed25519.verify(public_key, (parts[0] + "." + parts[1]).encode("ascii"), signature):
            raise ReceiptSignatureError()
        try:
            payload = json.loads(_b64_value(parts[1]))
            if not isinstance(payload, dict):
                raise ValueError("not an object")
            claims = ReceiptClaims.from_json(payload)
        except (ValueError, binascii.Error):
            raise MalformedError("the claims are not base64url JSON") from None
        now = self.now() if self.now is not None else time.time()
        if now >= claims.exp + self.leeway:
            raise ExpiredError(f"at {claims.exp}", claims)
        return claims


def fetch_verifier(url: str, *, timeout: float = 10.0, now: Callable[[], float] | None = None,
                   leeway: float = 0) -> ReceiptVerifier:
    """A verifier of the JWKS at url (countersign's
    /.well-known/jwks.json). Fetch again after a rotation: a receipt signed
    by a key the verifier does not hold is refused with UnknownKeyError.
    Raises JWKSError when the answer is not 200 or holds no key, OSError
    when the server cannot be reached."""
    req = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            body = resp.read(1 << 20)
    except urllib.error.HTTPError as e:
        with e:
            raise JWKSError(f"receipt: JWKS: {url} answered {e.code}") from None
    return ReceiptVerifier(body, now=now, leeway=leeway)
