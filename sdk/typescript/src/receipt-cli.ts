#!/usr/bin/env node
// countersign-receipt: checks one receipt from the command line, with the
// package's ReceiptVerifier, for a provider's shell scripts and for tests
// that hold verifiers of several languages to one answer.
//
//   countersign-receipt verify --jwks FILE [--key KEY] [--tool TOOL] --body FILE
//                              [--now SECONDS] [--leeway SECONDS] RECEIPT
//
// RECEIPT is the compact JWS ("-" reads it from standard input). Accepted:
// the claims as JSON on standard output, exit 0. Refused: the refusal's
// code (missing, malformed, unknown_key, signature, expired, other_key,
// other_tool, effect) on standard error, exit 1. A usage error exits 2.

import { readFileSync } from "node:fs";

import { ReceiptError } from "./errors.js";
import { ReceiptVerifier } from "./receipt.js";

const USAGE = `usage: countersign-receipt verify --jwks FILE [--key KEY] [--tool TOOL] --body FILE [--now SECONDS] [--leeway SECONDS] RECEIPT

Checks RECEIPT (a compact JWS; - reads it from standard input) against the
JWKS in FILE (GET /.well-known/jwks.json) for a write with Idempotency-Key
KEY, of TOOL, whose body is the file --body names. Prints the claims as JSON
and exits 0 when it approves the write; prints the refusal's code (missing,
malformed, unknown_key, signature, expired, other_key, other_tool, effect)
on standard error and exits 1 when not. --now checks expiry at that Unix
time instead of the clock's.
`;

class UsageError extends Error {}

async function main(args: string[]): Promise<number> {
  if (args[0] === "--help" || args[0] === "-h" || args[0] === "help") {
    process.stdout.write(USAGE);
    return 0;
  }
  if (args[0] !== "verify") throw new UsageError(args.length ? `unknown command ${JSON.stringify(args[0])}` : "no command");
  const flags = new Map<string, string>();
  const rest: string[] = [];
  for (let i = 1; i < args.length; i++) {
    const arg = args[i]!;
    const m = /^--(jwks|key|tool|body|now|leeway)(?:=(.*))?$/s.exec(arg);
    if (m) {
      const value = m[2] ?? args[++i];
      if (value === undefined) throw new UsageError(`--${m[1]} needs a value`);
      flags.set(m[1]!, value);
    } else if (arg.startsWith("--") && arg !== "--") {
      throw new UsageError(`unknown flag ${arg}`);
    } else {
      rest.push(...(arg === "--" ? args.slice(i + 1) : [arg]));
      if (arg === "--") break;
    }
  }
  if (rest.length !== 1) throw new UsageError("give one RECEIPT");
  const jwks = flags.get("jwks");
  const body = flags.get("body");
  if (jwks === undefined || body === undefined) throw new UsageError("--jwks and --body are required");
  const seconds = (name: string): number | undefined => {
    const v = flags.get(name);
    if (v === undefined) return undefined;
    if (!/^[0-9]+(\.[0-9]+)?$/.test(v)) throw new UsageError(`--${name} takes seconds, not ${JSON.stringify(v)}`);
    return Number(v);
  };
  const now = seconds("now");
  const leeway = seconds("leeway");
  const receipt = rest[0] === "-" ? readFileSync(0, "utf8").trim() : rest[0]!;

  const verifier = new ReceiptVerifier(readFileSync(jwks), { ...(now === undefined ? {} : { now }), ...(leeway === undefined ? {} : { leeway }) });
  try {
    const claims = await verifier.verify(receipt, { key: flags.get("key") ?? "", tool: flags.get("tool") ?? "", body: readFileSync(body) });
    process.stdout.write(JSON.stringify(claims) + "\n");
    return 0;
  } catch (e) {
    if (!(e instanceof ReceiptError)) throw e;
    process.stderr.write(`${e.code}\n`);
    return 1;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    if (e instanceof UsageError) {
      process.stderr.write(`countersign-receipt: ${e.message}\n\n${USAGE}`);
      process.exitCode = 2;
    } else {
      process.stderr.write(`countersign-receipt: ${e instanceof Error ? e.message : String(e)}\n`);
      process.exitCode = 2;
    }
  },
);
