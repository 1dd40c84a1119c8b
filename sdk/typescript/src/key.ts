// The intent key, computed offline exactly as countersign derives it.

import { canonical } from "./canonical.js";
import { JsonNumber } from "./json-number.js";
import { sha256Hex } from "./sha256.js";

/** Versions the key scheme; a new scheme gets a new prefix. */
export const KEY_PREFIX = "wa_";

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
