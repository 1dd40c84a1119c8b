// Checking the Countersign-Signature of a dispatch or a callback, on Web
// Crypto alone so it runs in Node, Deno, Bun and edge runtimes.
//
// docs/CALLBACKS.md is the contract; in short:
//
//   Countersign-Signature: t=<unix seconds>,v1=<hex>,v2=<hex>
//   v1 = HMAC-SHA256(secret, t + "." + body)
//   v2 = HMAC-SHA256(secret, t + "\n" + method + "\n" + path + "\n"
//                            + idempotencyKey + "\n" + deliveryId + "\n" + body)

import { SignatureError } from "./errors.js";

/** The header that carries the signature. */
export const SIGNATURE_HEADER = "Countersign-Signature";
/** How far, in seconds, a signature's time may be from now, either way. */
export const DEFAULT_TOLERANCE = 300;

const MAC = /^[0-9a-f]{64}$/;

export interface VerifyOptions {
  /** The request line's method (v2). Give method and path, or neither (v1 only). */
  method?: string;
  /** The request line's path exactly as sent: percent-encoding untouched, no query string (v2). */
  path?: string;
  /** A dispatch's Idempotency-Key header. */
  idempotencyKey?: string;
  /** A callback's Countersign-Delivery header. */
  deliveryId?: string;
  /** Seconds the signature's time may be from now; 300 by default. */
  tolerance?: number;
  /** Now, in Unix seconds; the clock by default. */
  now?: number;
}

/**
 * Checks a Countersign-Signature header, or rejects with SignatureError.
 *
 * `secret` is the tool's dispatch secret (a dispatch) or the agent's
 * callback secret (a callback), as configured: a string is its UTF-8 bytes,
 * nothing trimmed or decoded. `body` is the raw body as received, every
 * byte (a string is taken as its UTF-8 bytes); verify before parsing it.
 *
 * With `method` and `path`, a v2 must match them, the `idempotencyKey` or
 * the `deliveryId`, and the body: the check a receiver should make. Without
 * them, a v1 must match the body alone, which accepts the body sent again
 * under another key or path within the tolerance: only for a receiver that
 * cannot know how the request was sent. Either way the signature's time
 * must be within `tolerance` seconds of `now`, and any of several
 * signatures (a secret being rotated) may match.
 */
export async function verifySignature(
  secret: string | Uint8Array,
  header: string,
  body: string | Uint8Array | ArrayBuffer,
  options: VerifyOptions = {},
): Promise<void> {
  const { method, path, idempotencyKey = "", deliveryId = "", tolerance = DEFAULT_TOLERANCE } = options;
  if ((method === undefined) !== (path === undefined)) {
    throw new TypeError("give both method and path (to check v2), or neither (to check v1 only)");
  }
  const encoder = new TextEncoder();
  const key = typeof secret === "string" ? encoder.encode(secret) : new Uint8Array(secret);
  const bytes = typeof body === "string" ? encoder.encode(body) : body instanceof Uint8Array ? body : new Uint8Array(body);
  const now = options.now ?? Date.now() / 1000;
  const { t, v1, v2 } = parse(header, now, tolerance);

  let prefix: string;
  let candidates: string[];
  if (method === undefined || path === undefined) {
    prefix = t + ".";
    candidates = v1;
  } else {
    const parts = [t, method, path, idempotencyKey, deliveryId];
    if (parts.some((p) => p.includes("\n"))) throw new SignatureError("bad countersign signature");
    prefix = parts.join("\n") + "\n";
    candidates = v2;
  }
  const head = encoder.encode(prefix);
  const signed = new Uint8Array(head.length + bytes.length);
  signed.set(head);
  signed.set(bytes, head.length);

  const subtle = (await webCrypto()).subtle;
  const hmac = await subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const want = hex(new Uint8Array(await subtle.sign("HMAC", hmac, signed)));
  let matched = false;
  for (const candidate of candidates) {
    // Every value is compared, so the time taken says nothing of which matched.
    matched = constantTimeEqual(candidate, want) || matched;
  }
  if (!matched) throw new SignatureError("bad countersign signature");
}

function parse(header: string, now: number, tolerance: number): { t: string; v1: string[]; v2: string[] } {
  let t: string | undefined;
  const v1: string[] = [];
  const v2: string[] = [];
  for (const part of header.split(",")) {
    const trimmed = part.replace(/^[ \t]+|[ \t]+$/g, "");
    const eq = trimmed.indexOf("=");
    if (eq < 0) throw new SignatureError("bad countersign signature");
    const name = trimmed.slice(0, eq);
    const value = trimmed.slice(eq + 1);
    if (name === "t") {
      if (t !== undefined) throw new SignatureError("bad countersign signature");
      t = value;
    } else if ((name === "v1" || name === "v2") && MAC.test(value)) {
      (name === "v1" ? v1 : v2).push(value);
    }
  }
  if (t === undefined || !/^[0-9]+$/.test(t) || Math.abs(now - Number(t)) > tolerance) {
    throw new SignatureError("bad countersign signature");
  }
  return { t, v1, v2 };
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

// Node 18 has Web Crypto as node:crypto's webcrypto, global only from
// Node 19 on; every other runtime has it global.
async function webCrypto(): Promise<Crypto> {
  if (globalThis.crypto?.subtle) return globalThis.crypto;
  const { webcrypto } = await import("node:crypto");
  return webcrypto as unknown as Crypto;
}
