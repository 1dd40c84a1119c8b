"""Verify a receipt from the command line:

    python3 -m countersign.receipt verify --jwks FILE [--key KEY] [--tool TOOL] [--now SECONDS] --body FILE RECEIPT

prints the receipt's claims as JSON and exits 0 when it approves the write
(the body in FILE, with the Idempotency-Key KEY, of TOOL), else prints the
refusal's code (missing, malformed, unknown_key, signature, expired,
other_key, other_tool, effect) on stderr and exits 1. RECEIPT ``-`` reads
the receipt from standard input. A usage error or an unreadable file exits
2.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import JWKSError, ReceiptError, ReceiptVerifier


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m countersign.receipt",
                                     description="Check countersign approval receipts.")
    commands = parser.add_subparsers(dest="command", required=True)
    verify = commands.add_parser("verify", help="verify a receipt against a JWKS and a write")
    verify.add_argument("--jwks", required=True, help="the JWKS document (GET /.well-known/jwks.json), a file")
    verify.add_argument("--key", default="", help="the write's Idempotency-Key (unchecked when absent)")
    verify.add_argument("--tool", default="", help="the tool the write is of (unchecked when absent)")
    verify.add_argument("--body", required=True, help="the write's body, a file")
    verify.add_argument("--now", type=float, default=None, help="the time to check expiry at, seconds since the epoch")
    verify.add_argument("--leeway", type=float, default=0, help="seconds past its expiry a receipt is still taken")
    verify.add_argument("receipt", help="the receipt (compact JWS), or - to read it from standard input")
    args = parser.parse_args(argv)

    try:
        with open(args.jwks, "rb") as f:
            jwks = f.read()
        with open(args.body, "rb") as f:
            body = f.read()
        verifier = ReceiptVerifier(jwks, now=None if args.now is None else (lambda: args.now), leeway=args.leeway)
    except (OSError, JWKSError) as e:
        print(f"countersign.receipt: {e}", file=sys.stderr)
        return 2
    token = sys.stdin.read().strip() if args.receipt == "-" else args.receipt
    try:
        claims = verifier.verify(token, key=args.key, tool=args.tool, body=body)
    except ReceiptError as e:
        print(e.code, file=sys.stderr)
        return 1
    print(json.dumps(claims.to_json()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
