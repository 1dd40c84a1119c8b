// The intent key, computed offline exactly as countersign derives it.

import { canonical } from "./canonical.js";
import { JsonNumber } from "./json-number.js";
import { sha256Hex } from "./sha256.js";

/** Versions the key scheme; a new scheme gets a new prefix. */
export const KEY_PREFIX = "wa_";

/** What a client key may hold besides ASCII letters and digits. */
export const CLIENT_KEY_PUNCTUATION = "-_.:~/+=";

const CLIENT_KEY = /^[A-Za-z0-9._~:/+=-]*$/;
const CLIENT_KEY_RULE =
  "the Idempotency-Key (header or idempotency_key) must be 8 to 255 characters, each a letter, a digit or one of " + CLIENT_KEY_PUNCTUATION;

/**
 * A client key countersign would refuse (422 invalid_request naming the
 * Idempotency-Key); Client.request throws it before sending anything.
 */
export class InvalidKeyError extends RangeError {
  override name = "InvalidKeyError";
}

/**
 * Throws InvalidKeyError unless countersign takes `key` as the client key
 * (idempotencyKey) of an intent whose key is `derived`. A client key is 8 to
 * 255 characters, each an ASCII letter, a digit or one of -_.:~/+=: it is
 * sent to the provider as a header, which an HTTP server may trim or fold,
 * and it must arrive as the same string. One that begins with wa_, in any
 * letter case, must be `derived` itself: the prefix is the derived keys'.
 * Without `derived` only the characters and the length are checked.
 */
export function checkClientKey(key: string, derived?: string): void {
  if (typeof key !== "string") throw new TypeError("idempotencyKey must be a string");
  const length = [...key].length;
  if (key.length < 8 || key.length > 255) throw new InvalidKeyError(`${CLIENT_KEY_RULE}; this one has ${length}`);
  if (!CLIENT_KEY.test(key)) {
    const chars = [...key];
    const at = chars.findIndex((c) => !CLIENT_KEY.test(c));
    const code = chars[at]!.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0");
    throw new InvalidKeyError(`${CLIENT_KEY_RULE}; character ${at + 1} (U+${code}) is not`);
  }
  if (derived !== undefined && hasKeyPrefix(key) && key !== derived) {
    throw new InvalidKeyError(
      `an Idempotency-Key (header or idempotency_key) that begins with ${KEY_PREFIX}, in any letter case, ` +
        "must be the key this intent derives; send that key, none, or a key without the prefix",
    );
  }
}

/** Whether key begins with the derived keys' prefix, in any letter case. */
export function hasKeyPrefix(key: string): boolean {
  return key.slice(0, KEY_PREFIX.length).toLowerCase() === KEY_PREFIX;
}

/**
 * An effect: a plain object (a JSON object), of any interface; its values
 * are checked when it is written.
 */
export type Effect = object;

/** A step: an integer or a string, used as given (6 and "6" differ). */
export type Step = number | bigint | string | JsonNumber;

/**
 * Returns the key countersign stores for this intent, without asking it:
 * "wa_" + the hex SHA-256 of the RFC 8785 form of
 * {"run": runId, "step": step, "tool": tool, "effect": effect}. The summary,
 * reason and requestedFor never enter it. Numbers follow the rules in
 * canonical.ts: a NumberError names, by its JSON Pointer, a number the
 * server would refuse with 422 invalid_request.
 */
export function intentKey(runId: string, step: Step, tool: string, effect: Effect): string {
  if (typeof runId !== "string" || runId.trim() === "") throw new TypeError("runId must be a non-empty string");
  if (typeof tool !== "string" || tool.trim() === "") throw new TypeError("tool must be a non-empty string");
  checkStep(step);
  if (typeof effect !== "object" || effect === null || Array.isArray(effect) || effect instanceof JsonNumber) {
    throw new TypeError("effect must be an object");
  }
  // In the order the body is sent, so a refusal names what the server
  // would; RFC 8785 then orders the members by name: effect, run, step, tool.
  const run = canonical(runId, "/run_id");
  const stepText = canonical(step, "/step");
  const toolText = canonical(tool, "/tool");
  const effectText = canonical(effect, "/effect");
  const basis = `{"effect":${effectText},"run":${run},"step":${stepText},"tool":${toolText}}`;
  return KEY_PREFIX + sha256Hex(new TextEncoder().encode(basis));
}

/** Throws TypeError unless step is an integer or a non-empty string. */
export function checkStep(step: Step): void {
  if (typeof step === "string") {
    if (step.trim() === "") throw new TypeError("step must not be an empty string");
    return;
  }
  if (typeof step === "bigint" || step instanceof JsonNumber) return;
  if (typeof step !== "number" || !Number.isInteger(step)) {
    throw new TypeError(`step must be an integer or a string, not ${String(step)}`);
  }
}
