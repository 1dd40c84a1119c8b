"""JSON as countersign reads it: RFC 8785 (JCS) for the key, and the number rules.

countersign derives a request's key from the RFC 8785 form of its basis and
refuses a number whose RFC 8785 form would denote another value than the one
sent (docs/DECISIONS.md). This module writes both forms this package needs
from Python values: the body it sends (`dumps`) and the canonical bytes the
key is computed from (`canonical`), so the key computed offline is the key
the server derives from that body.

How Python numbers are written:

- an ``int`` is a JSON integer, written in full; beyond ±2^53 it is refused;
- a ``float`` is the binary64 value it holds, sent as ``repr`` writes it
  (``1.0``, ``1e+20``); the server accepts every finite float, and RFC 8785
  writes it in its shortest form (``1.0`` keys as ``1``, like the integer 1);
  NaN and the infinities are refused;
- a ``decimal.Decimal`` is sent exactly as ``str`` writes it and checked as
  the server checks that literal: ``Decimal("0.1")`` is 0.1 and
  ``Decimal("9007199254740993.0")`` is refused, since RFC 8785 would write
  9007199254740992.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

#: Integers up to 2^53 in magnitude are exact in every JSON reader.
MAX_SAFE_INTEGER = 2**53


class NumberError(ValueError):
    """A number countersign refuses: RFC 8785 would write it as another value.

    ``pointer`` is where it is, as a JSON Pointer (RFC 6901) into the intent
    (``/effect/lines/1/amount``), the same the server's 422 names.
    """

    def __init__(self, pointer: str, literal: str, reason: str, canonical: str = "") -> None:
        self.pointer = pointer
        self.literal = literal
        self.canonical = canonical
        at = pointer or "the top level"
        shown = literal if len(literal) <= 40 else f"{literal[:32]}… ({len(literal)} characters)"
        if reason == "beyond":
            text = f"the integer {shown} at {at} is beyond ±2^53, where integers are not all exact; send it as a string"
        elif reason == "range":
            text = f"the number {shown} at {at} is out of range; send it as a string"
        elif reason == "nan":
            text = f"the number {shown} at {at} is not a JSON number; send it as a string"
        else:
            text = f"the number {shown} at {at} is not exact: RFC 8785 writes it as {canonical}; send it as a string"
        super().__init__(text)


def canonical(value: Any, pointer: str = "") -> str:
    """Return the RFC 8785 form of value, refusing what countersign refuses.

    Raises NumberError for a number, ValueError for a string that is not
    Unicode text (a lone surrogate) and TypeError for a value JSON cannot
    hold, each naming the value's JSON Pointer.
    """
    return _write(value, pointer, True)


def dumps(value: Any) -> str:
    """Return value as the JSON this package sends: numbers as written (see
    the module's notes), members in the order given, no whitespace."""
    return _write(value, "", False)


def number_literal(value: int | float | Decimal, pointer: str) -> str:
    """Return the JSON literal this package sends for a number."""
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NumberError(pointer, repr(value), "nan")
        return repr(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise NumberError(pointer, str(value), "nan")
        return str(value)
    return str(int(value))


def check_number(literal: str, pointer: str) -> str:
    """Return the RFC 8785 form of a JSON number literal, or raise
    NumberError when it would denote another value than the literal (the
    server's rule: an integer literal must lie within ±2^53; any other must
    keep its decimal value)."""
    if not any(c in literal for c in ".eE"):
        n = int(literal)
        if abs(n) > MAX_SAFE_INTEGER:
            raise NumberError(pointer, literal, "beyond")
        return str(n)
    f = float(literal)  # correctly rounded; an overflow is inf, an underflow 0
    if not math.isfinite(f):
        raise NumberError(pointer, literal, "range")
    written = es_number(f)
    if written != literal and not _same_decimal(literal, written):
        raise NumberError(pointer, literal, "inexact", written)
    return written


def _same_decimal(a: str, b: str) -> bool:
    try:
        return Decimal(a) == Decimal(b)  # exact, whatever the context's precision
    except InvalidOperation:
        # An exponent out of Decimal's reach is one no float64 approaches.
        return False


def es_number(f: float) -> str:
    """Write a finite float as ECMAScript's Number.prototype.toString does,
    which is how RFC 8785 writes numbers: the shortest digits that read back
    as f (which repr also finds), placed by ECMAScript's rules."""
    if f == 0:
        return "0"  # -0 included
    sign = "-" if f < 0 else ""
    mantissa, _, exp = repr(abs(f)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    all_digits = whole + fraction
    digits = all_digits.lstrip("0")
    # The value is 0.digits × 10^n.
    n = len(whole) - (len(all_digits) - len(digits)) + (int(exp) if exp else 0)
    digits = digits.rstrip("0")
    k = len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        e = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + ("e+" if e >= 0 else "e-") + str(abs(e))
    return sign + text


def escape_pointer(name: str) -> str:
    """Write a member name as a JSON Pointer reference token."""
    return name.replace("~", "~0").replace("/", "~1")


def _utf16(name: str) -> bytes:
    # RFC 8785 orders members by their names' UTF-16 code units.
    return name.encode("utf-16-be", "surrogatepass")


def _string(s: str, pointer: str) -> str:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"the string at {pointer or 'the top level'} holds a lone surrogate, which is not Unicode text") from None
    # json escapes exactly as RFC 8785 does: quote, backslash, and control
    # characters (\b \t \n \f \r, else \u00xx); everything else as it is.
    return json.dumps(s, ensure_ascii=False)


def _write(value: Any, pointer: str, canonical_form: bool) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value, pointer)
    if isinstance(value, (int, float, Decimal)):
        literal = number_literal(value, pointer)
        return check_number(literal, pointer) if canonical_form else literal
    if isinstance(value, Mapping):
        members = []
        # Written in the order given, so a refusal names the first value at
        # fault in the body as sent, as the server does; sorted after.
        for name in value:
            if not isinstance(name, str):
                raise TypeError(f"a member name at {pointer or 'the top level'} is a {type(name).__name__}, not a string")
            child = pointer + "/" + escape_pointer(name)
            members.append((name, _string(name, child) + ":" + _write(value[name], child, canonical_form)))
        if canonical_form:
            members.sort(key=lambda member: _utf16(member[0]))
        return "{" + ",".join(member for _, member in members) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_write(v, f"{pointer}/{i}", canonical_form) for i, v in enumerate(value)) + "]"
    raise TypeError(f"the value at {pointer or 'the top level'} is a {type(value).__name__}, which JSON cannot hold")


def canonical_text(text: bytes | str) -> str:
    """Return the RFC 8785 form of one JSON text, as countersign writes it
    for an effect it received (its receipts' effect_sha256): every number is
    the binary64 value nearest its literal, written as ECMAScript writes it;
    members are sorted by their names' UTF-16 code units.

    Raises ValueError for a text that is not one JSON value in UTF-8, that
    repeats a member name within an object, or holds a number beyond the
    binary64 range (or NaN, Infinity), and for a lone surrogate.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8")  # a UnicodeDecodeError is a ValueError

    def refuse(literal: str) -> Any:
        raise ValueError(f"{literal} is not a JSON number")

    def number(literal: str) -> float:
        f = float(literal)
        if not math.isfinite(f):
            raise ValueError(f"the number {literal[:40]} is out of range")
        return f

    def unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        members = dict(pairs)
        if len(members) != len(pairs):
            raise ValueError("an object repeats a member name")
        return members

    try:
        value = json.loads(text, parse_int=number, parse_float=number, parse_constant=refuse, object_pairs_hook=unique)
    except RecursionError:
        raise ValueError("the JSON text is nested too deeply") from None
    return canonical(value)
