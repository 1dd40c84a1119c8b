"""Ed25519 signature verification (RFC 8032, section 5.1.7), in Python.

Only what a receipt's verifier needs: verify(public_key, message,
signature). It checks its inputs as RFC 8032 says: a 32-byte public key
that decodes to a point of the curve, a 64-byte signature whose R decodes
and whose S is below the group order L, then the group equation
[S]B = R + [k]A, k = SHA-512(R || A || message) mod L (the cofactorless
check, as Go's crypto/ed25519 makes it).

This is plain integer arithmetic, not constant time: verification handles
public values only (the key, the message, the signature), so there is no
secret for its timing to leak. It signs nothing.
"""

from __future__ import annotations

import hashlib

#: The field's prime, 2^255 - 19.
P = 2**255 - 19
#: The order of the base point's group.
L = 2**252 + 27742317777372353535851937790883648493
#: The curve's constant d = -121665/121666.
D = -121665 * pow(121666, P - 2, P) % P
#: A square root of -1 modulo P.
SQRT_M1 = pow(2, (P - 1) // 4, P)

PUBLIC_KEY_SIZE = 32
SIGNATURE_SIZE = 64

# Points in extended coordinates (X, Y, Z, T), x = X/Z, y = Y/Z, x*y = T/Z.
Point = tuple[int, int, int, int]

_IDENTITY: Point = (0, 1, 1, 0)


def _recover_x(y: int, sign: int) -> int | None:
    """The x of the curve's point with this y whose low bit is sign
    (RFC 8032, 5.1.3, steps 2 to 4), or None when there is none."""
    if y >= P:
        return None
    u = (y * y - 1) % P
    v = (D * y * y + 1) % P
    # x = (u/v)^((p+3)/8), computed as u v^3 (u v^7)^((p-5)/8).
    x = u * pow(v, 3, P) * pow(u * pow(v, 7, P), (P - 5) // 8, P) % P
    vxx = v * x * x % P
    if vxx == u:
        pass
    elif vxx == (-u) % P:
        x = x * SQRT_M1 % P
    else:
        return None
    if x == 0 and sign == 1:
        return None
    if x & 1 != sign:
        x = P - x
    return x


def decode_point(data: bytes) -> Point | None:
    """The point a 32-byte encoding names, or None when it names none: y
    little-endian with x's low bit on top (RFC 8032, 5.1.3). A y of P or
    more is refused, as RFC 8032 says."""
    if len(data) != 32:
        return None
    n = int.from_bytes(data, "little")
    sign, y = n >> 255, n & ((1 << 255) - 1)
    x = _recover_x(y, sign)
    if x is None:
        return None
    return (x, y, 1, x * y % P)


def encode_point(p: Point) -> bytes:
    """A point's 32-byte encoding (RFC 8032, 5.1.2)."""
    x, y, z, _ = p
    zi = pow(z, P - 2, P)
    x, y = x * zi % P, y * zi % P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def _add(p: Point, q: Point) -> Point:
    # RFC 8032, 5.1.4: addition in extended coordinates.
    x1, y1, z1, t1 = p
    x2, y2, z2, t2 = q
    a = (y1 - x1) * (y2 - x2) % P
    b = (y1 + x1) * (y2 + x2) % P
    c = 2 * t1 * t2 * D % P
    d = 2 * z1 * z2 % P
    e, f, g, h = b - a, d - c, d + c, b + a
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def _double(p: Point) -> Point:
    # RFC 8032, 5.1.4: doubling.
    x1, y1, z1, _ = p
    a = x1 * x1 % P
    b = y1 * y1 % P
    c = 2 * z1 * z1 % P
    h = a + b
    e = h - (x1 + y1) ** 2 % P
    g = a - b
    f = c + g
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def _multiply(n: int, p: Point) -> Point:
    q = _IDENTITY
    for bit in bin(n)[2:]:
        q = _double(q)
        if bit == "1":
            q = _add(q, p)
    return q


def _negate(p: Point) -> Point:
    x, y, z, t = p
    return (-x % P, y, z, -t % P)


_BASE_Y = 4 * pow(5, P - 2, P) % P
_BASE_X = _recover_x(_BASE_Y, 0)
assert _BASE_X is not None
#: The base point B.
BASE: Point = (_BASE_X, _BASE_Y, 1, _BASE_X * _BASE_Y % P)


def verify(public_key: bytes, message: bytes, signature: bytes) -> bool:
    """Whether signature is public_key's Ed25519 signature of message.

    A key that is not 32 bytes raises ValueError (a caller's mistake, as in
    Go's ed25519.Verify); a signature that is not 64 bytes, or whose S is
    not below L, or whose R or key does not decode, is not a signature:
    False."""
    if len(public_key) != PUBLIC_KEY_SIZE:
        raise ValueError(f"an Ed25519 public key is {PUBLIC_KEY_SIZE} bytes, not {len(public_key)}")
    if len(signature) != SIGNATURE_SIZE:
        return False
    a = decode_point(public_key)
    if a is None:
        return False
    r_bytes = signature[:32]
    if decode_point(r_bytes) is None:
        return False
    s = int.from_bytes(signature[32:], "little")
    if s >= L:
        return False
    k = int.from_bytes(hashlib.sha512(r_bytes + public_key + message).digest(), "little") % L
    # [S]B - [k]A must encode as R, byte for byte.
    return encode_point(_add(_multiply(s, BASE), _multiply(k, _negate(a)))) == r_bytes
