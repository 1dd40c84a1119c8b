// Checking a Countersign-Receipt, as a provider of an agent-executed tool
// does before it takes a write: the Go verifier (package receipt) in
// TypeScript, on Web Crypto alone so it runs wherever verifySignature runs.
//
// docs/RECEIPTS.md is the contract; in short, a receipt is a compact JWS
//
//   base64url(header) "." base64url(claims) "." base64url(Ed25519 signature)
//
// with header {"alg":"EdDSA","kid":<the key's RFC 7638 thumbprint>,
// "typ":"countersign-receipt+jwt"}, signed by a key that GET
// /.well-known/jwks.json serves. It approves the write whose Idempotency-Key
// is its `key`, of its `tool`, whose body's RFC 8785 digest is its
// `effect_sha256`, until its `exp`.

import { canonical } from "./canonical.js";
import {
  CountersignError,
  ReceiptEffectError,
  ReceiptExpiredError,
  ReceiptMalformedError,
  ReceiptMissingError,
  ReceiptOtherKeyError,
  ReceiptOtherToolError,
  ReceiptSignatureError,
  ReceiptUnknownKeyError,
  type ReceiptClaims,
} from "./errors.js";
import { parseJSON } from "./json-number.js";
import { sha256Hex } from "./sha256.js";

/** The header a receipt is sent in, with the write. */
export const RECEIPT_HEADER = "Countersign-Receipt";
/** The JWS alg of a receipt. */
export const RECEIPT_ALG = "EdDSA";
/** The JWS typ of a receipt. */
export const RECEIPT_TYPE = "countersign-receipt+jwt";

export interface ReceiptVerifierOptions {
  /** Now, in Unix seconds, or a clock returning it; the system clock by default. */
  now?: number | (() => number);
  /** Seconds past its exp a receipt is still taken, for clocks apart; 0 by default. */
  leeway?: number;
}

/** The write a provider received, that a receipt must approve. */
export interface ReceiptWant {
  /** The write's Idempotency-Key; "" or absent does not check it. */
  key?: string;
  /** The tool the provider serves; "" or absent does not check it. */
  tool?: string;
  /**
   * The write's body as received, every byte (a string is its UTF-8 bytes):
   * its RFC 8785 digest must equal the receipt's effect_sha256, so another
   * member order or spacing is the same effect, one changed value is not.
   */
  body: string | Uint8Array | ArrayBuffer;
}

/** A JWKS document, as GET /.well-known/jwks.json serves it. */
export interface JWKS {
  keys: { kty?: string; crv?: string; x?: string; kid?: string; [member: string]: unknown }[];
}

const BASE64URL = /^[A-Za-z0-9_-]*$/;

// decode reads unpadded base64url strictly, as Go's RawURLEncoding does: a
// padding character or any other outside the alphabet is refused.
function decode(part: string): Uint8Array<ArrayBuffer> | undefined {
  if (!BASE64URL.test(part) || part.length % 4 === 1) return undefined;
  const standard = part.replace(/-/g, "+").replace(/_/g, "/");
  const binary = atob(standard + "=".repeat((4 - (standard.length % 4)) % 4));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function decodeJSON(part: string): unknown {
  const bytes = decode(part);
  if (bytes === undefined) throw new SyntaxError("not base64url");
  return JSON.parse(utf8.decode(bytes));
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const STRING_CLAIMS = ["key", "tool", "agent", "effect_sha256", "decided_by", "via", "policy_version"] as const;

// readClaims reads a receipt's payload as Go decodes it into its Claims:
// members it does not know are passed over, a missing one is its zero
// value, one of another type makes the receipt malformed.
function readClaims(json: unknown): ReceiptClaims {
  if (!isObject(json)) throw new TypeError("the claims are not an object");
  const claims: ReceiptClaims = { key: "", tool: "", agent: "", effect_sha256: "", decided_by: "", via: "", policy_version: "", iat: 0, exp: 0 };
  for (const name of STRING_CLAIMS) {
    const v = json[name];
    if (v === undefined || v === null) continue;
    if (typeof v !== "string") throw new TypeError(`${name} is not a string`);
    claims[name] = v;
  }
  for (const name of ["iat", "exp"] as const) {
    const v = json[name];
    if (v === undefined || v === null) continue;
    if (typeof v !== "number" || !Number.isSafeInteger(v)) throw new TypeError(`${name} is not an integer`);
    claims[name] = v;
  }
  return claims;
}

/**
 * Returns the lowercase hex SHA-256 of a JSON text's RFC 8785 form: what a
 * receipt's effect_sha256 holds for the effect a provider received. Throws
 * a SyntaxError, TypeError or NumberError when body is not one JSON value
 * countersign would take.
 */
export function effectDigest(body: string | Uint8Array | ArrayBuffer): string {
  const text = typeof body === "string" ? body : utf8.decode(body instanceof Uint8Array ? body : new Uint8Array(body));
  // Numbers are kept as written (JsonNumber) and checked as the server
  // checks them, so the digest is the one the server took of the effect.
  return sha256Hex(new TextEncoder().encode(canonical(parseJSON(text))));
}

/**
 * Checks receipts against countersign's public keys, as the Go verifier
 * does: the header (alg EdDSA, typ countersign-receipt+jwt, a kid the JWKS
 * holds), the Ed25519 signature, the expiry, and that the receipt approves
 * the write: its key, its tool, the RFC 8785 digest of its body. Each
 * refusal is a ReceiptError whose `code` (and class) says why.
 *
 * Build one per JWKS and keep it; fetch the JWKS again after a rotation
 * (a receipt signed by a key it does not hold is ReceiptUnknownKeyError).
 */
export class ReceiptVerifier {
  private readonly jwks = new Map<string, string>(); // kid → x
  private readonly imported = new Map<string, Promise<CryptoKey>>();
  private readonly now: () => number;
  private readonly leeway: number;

  /**
   * Takes a JWKS document: its text (string or bytes) or the parsed
   * object. Keys that are not Ed25519 are passed over; a document with none,
   * or with an Ed25519 key whose x is not 32 bytes, throws.
   */
  constructor(jwks: string | Uint8Array | ArrayBuffer | JWKS, options: ReceiptVerifierOptions = {}) {
    let doc: unknown = jwks;
    if (typeof jwks === "string" || jwks instanceof Uint8Array || jwks instanceof ArrayBuffer) {
      const text = typeof jwks === "string" ? jwks : new TextDecoder().decode(jwks);
      try {
        doc = JSON.parse(text);
      } catch (e) {
        throw new CountersignError(`receipt: JWKS: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
      }
    }
    const keys = isObject(doc) && Array.isArray(doc.keys) ? (doc.keys as unknown[]) : [];
    for (const k of keys) {
      if (!isObject(k) || k.kty !== "OKP" || k.crv !== "Ed25519") continue;
      const kid = typeof k.kid === "string" ? k.kid : "";
      const x = typeof k.x === "string" ? k.x : "";
      if (decode(x)?.length !== 32) throw new CountersignError(`receipt: JWKS: key ${JSON.stringify(kid)}: x is not an Ed25519 public key`);
      this.jwks.set(kid, x);
    }
    if (this.jwks.size === 0) throw new CountersignError("receipt: JWKS: no Ed25519 key");
    const { now, leeway = 0 } = options;
    this.now = typeof now === "function" ? now : now === undefined ? () => Date.now() / 1000 : () => now;
    this.leeway = leeway;
  }

  /** The key ids this verifier holds. */
  get kids(): string[] {
    return [...this.jwks.keys()];
  }

  /**
   * Checks receipt's signature and expiry, and that it approves the write
   * `want` describes; returns its claims, or rejects with a ReceiptError.
   */
  async verify(receipt: string, want: ReceiptWant): Promise<ReceiptClaims> {
    const claims = await this.parse(receipt);
    if (want.key && claims.key !== want.key) throw new ReceiptOtherKeyError("receipt: approves a request with another key", { claims });
    if (want.tool && claims.tool !== want.tool) throw new ReceiptOtherToolError("receipt: approves a write of another tool", { claims });
    let digest: string;
    try {
      digest = effectDigest(want.body);
    } catch (e) {
      const why = e instanceof Error ? e.message : String(e);
      throw new ReceiptEffectError(`receipt: the body is not the approved effect: the body is not one JSON value: ${why}`, { claims, cause: e });
    }
    if (digest !== claims.effect_sha256) throw new ReceiptEffectError("receipt: the body is not the approved effect", { claims });
    return claims;
  }

  /**
   * Checks the receipt of an HTTP write: its Countersign-Receipt against
   * its Idempotency-Key and body (already read), for the tool the provider
   * serves. headers is a Fetch Headers or Node's IncomingHttpHeaders.
   */
  async verifyRequest(
    headers: Headers | Record<string, string | string[] | undefined>,
    body: string | Uint8Array | ArrayBuffer,
    tool: string,
  ): Promise<ReceiptClaims> {
    const get = (name: string): string => {
      if (headers instanceof Headers) return headers.get(name) ?? "";
      const v = headers[name.toLowerCase()] ?? headers[name];
      return Array.isArray(v) ? v.join(", ") : (v ?? "");
    };
    const receipt = get(RECEIPT_HEADER).trim();
    if (receipt === "") throw new ReceiptMissingError("receipt: none was sent");
    return this.verify(receipt, { key: get("Idempotency-Key"), tool, body });
  }

  /** Checks receipt's signature and expiry and returns its claims, without comparing them with a write. */
  async parse(receipt: string): Promise<ReceiptClaims> {
    if (receipt === "") throw new ReceiptMissingError("receipt: none was sent");
    const malformed = (cause?: unknown) => new ReceiptMalformedError("receipt: not a compact JWS countersign signs", { cause });
    const parts = receipt.split(".");
    if (parts.length !== 3) throw malformed();
    const [head, payload, signature] = parts as [string, string, string];
    let header: unknown;
    try {
      header = decodeJSON(head);
    } catch (e) {
      throw malformed(e);
    }
    if (!isObject(header) || header.alg !== RECEIPT_ALG || header.typ !== RECEIPT_TYPE) throw malformed();
    const kid = typeof header.kid === "string" ? header.kid : "";
    if (!this.jwks.has(kid)) throw new ReceiptUnknownKeyError("receipt: signed by a key the JWKS does not hold");
    const sig = decode(signature);
    if (sig === undefined) throw malformed();
    const subtle = (await webCrypto()).subtle;
    const key = await this.key(kid);
    const signed = new TextEncoder().encode(head + "." + payload);
    // An Ed25519 signature is 64 bytes; any other length never verifies.
    if (sig.length !== 64 || !(await subtle.verify({ name: "Ed25519" }, key, sig, signed))) {
      throw new ReceiptSignatureError("receipt: the signature does not match");
    }
    let claims: ReceiptClaims;
    try {
      claims = readClaims(decodeJSON(payload));
    } catch (e) {
      throw malformed(e);
    }
    if (!(this.now() < claims.exp + this.leeway)) throw new ReceiptExpiredError("receipt: expired", { claims });
    return claims;
  }

  private key(kid: string): Promise<CryptoKey> {
    let key = this.imported.get(kid);
    if (key === undefined) {
      const jwk = { kty: "OKP", crv: "Ed25519", x: this.jwks.get(kid)! };
      key = webCrypto().then((c) => c.subtle.importKey("jwk", jwk, { name: "Ed25519" }, false, ["verify"]));
      this.imported.set(kid, key);
    }
    return key;
  }
}

/**
 * Reads the JWKS at url (countersign's /.well-known/jwks.json) and returns
 * a verifier of its keys. Fetch again after a rotation.
 */
export async function fetchVerifier(
  url: string,
  options: ReceiptVerifierOptions & { fetch?: typeof fetch; signal?: AbortSignal } = {},
): Promise<ReceiptVerifier> {
  const fetcher = options.fetch ?? globalThis.fetch;
  let resp: Response;
  try {
    resp = await fetcher(url, { headers: { Accept: "application/json" }, redirect: "error", signal: options.signal ?? null });
  } catch (e) {
    throw new CountersignError(`receipt: JWKS: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
  }
  const body = await resp.text();
  if (resp.status !== 200) throw new CountersignError(`receipt: JWKS: ${url} answered ${resp.status}`);
  return new ReceiptVerifier(body, options);
}

// Node 18 has Web Crypto as node:crypto's webcrypto, global only from
// Node 19 on; every other runtime has it global.
async function webCrypto(): Promise<Crypto> {
  if (globalThis.crypto?.subtle) return globalThis.crypto;
  const { webcrypto } = await import("node:crypto");
  return webcrypto as unknown as Crypto;
}
