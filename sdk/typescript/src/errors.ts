// The errors countersign answers, one class per stable error code.
//
// Every refusal is one envelope, {"error": {"code", "message", "field",
// "errors", "request_id"}}; APIError carries it, and each code of the
// ErrorCode enum in the OpenAPI document (GET /v1/openapi.json) has its own
// subclass, so `e instanceof KeyReusedError` reads like the code it catches.

import type { Request } from "./request.js";

/** The base of every error this package throws about countersign. */
export class CountersignError extends Error {
  override name = "CountersignError";
}

/** One value at fault: its JSON Pointer (or a header's or parameter's name) and why. */
export interface Violation {
  readonly field: string;
  readonly message: string;
}

/** What an APIError is built from. */
export interface APIErrorInit {
  status: number;
  code: string;
  message: string;
  field?: string | undefined;
  errors?: readonly Violation[];
  requestId?: string | undefined;
  retryAfter?: number | undefined;
}

/**
 * A refusal from countersign: the HTTP status, the stable code, a sentence
 * for a human, the value at fault (`field`, and `errors` when there are
 * several), the `requestId` the server logged the call under, and for a 503
 * the `retryAfter` it asked for, in seconds. Thrown as itself for a code
 * this version does not know, or an answer without the envelope.
 */
export class APIError extends CountersignError {
  override name = "APIError";
  /** The error code the class stands for; "" on APIError itself. */
  static readonly code: string = "";
  readonly status: number;
  readonly code: string;
  readonly field: string | undefined;
  readonly errors: readonly Violation[];
  readonly requestId: string | undefined;
  readonly retryAfter: number | undefined;
  /** The server's sentence, without what the message adds around it. */
  readonly detail: string;

  constructor(init: APIErrorInit) {
    let text = `countersign: ${init.code || `HTTP ${init.status}`} (${init.status})`;
    if (init.field) text += ` at ${init.field}`;
    text += `: ${init.message}`;
    if (init.requestId) text += ` (request ${init.requestId})`;
    super(text);
    this.status = init.status;
    this.code = init.code;
    this.detail = init.message;
    this.field = init.field;
    this.errors = init.errors ?? [];
    this.requestId = init.requestId;
    this.retryAfter = init.retryAfter;
  }
}

/** The body was not JSON, or not UTF-8 (a bug in the caller). */
export class MalformedJSONError extends APIError {
  override name = "MalformedJSONError";
  static override readonly code = "malformed_json";
}

/** A field is missing or wrong, or a number is inexact; `field` names it. */
export class InvalidRequestError extends APIError {
  override name = "InvalidRequestError";
  static override readonly code = "invalid_request";
}

/** The effect fails the tool's effect_schema; `errors` lists every violation. Nothing was stored. */
export class InvalidEffectError extends APIError {
  override name = "InvalidEffectError";
  static override readonly code = "invalid_effect";
}

/** The configuration has no such tool; `tools` are the tools this agent may use (the message names them too). */
export class UnknownToolError extends APIError {
  override name = "UnknownToolError";
  static override readonly code = "unknown_tool";
  tools: readonly string[] = [];
}

/**
 * The tool's policy refuses this write (403): `tier` names the rule that
 * denied it, and `key` the request, stored as rejected by `policy:<tier>`
 * (get() finds it). Sending the same intent again gets the same answer:
 * only a different write, or a person changing the policy, can proceed.
 * Nothing is sent to the tool.
 */
export class DeniedByPolicyError extends APIError {
  override name = "DeniedByPolicyError";
  static override readonly code = "denied_by_policy";
  key: string | undefined;
  tier: string | undefined;
}

/** An agent-executed write's outcome was reported already, and differently: the first report stands. */
export class OutcomeConflictError extends APIError {
  override name = "OutcomeConflictError";
  static override readonly code = "outcome_conflict";
}

/** An outcome reported for a request that awaits none from its agent (countersign sends its tool's writes, or it was not approved). */
export class NotAgentExecutedError extends APIError {
  override name = "NotAgentExecutedError";
  static override readonly code = "not_agent_executed";
}

/** The key already names another write (or another agent's request); the intent must change. */
export class KeyReusedError extends APIError {
  override name = "KeyReusedError";
  static override readonly code = "key_reused";
}

/**
 * The key named this intent's request, which settled and was pruned under
 * the server's retention policy; `finalStatus` says how it ended (rejected,
 * expired, cancelled, succeeded or failed). The key never runs again: a new
 * write needs a new key.
 */
export class PrunedError extends APIError {
  override name = "PrunedError";
  static override readonly code = "pruned";
  finalStatus: string | undefined;
}

/** No token, or one no agent holds. */
export class UnauthorizedError extends APIError {
  override name = "UnauthorizedError";
  static override readonly code = "unauthorized";
}

/** The body is over 1 MiB. */
export class TooLargeError extends APIError {
  override name = "TooLargeError";
  static override readonly code = "too_large";
}

/** No request has that id or key, or it is another agent's. */
export class NotFoundError extends APIError {
  override name = "NotFoundError";
  static override readonly code = "not_found";
}

/** The request is no longer pending. */
export class AlreadyDecidedError extends APIError {
  override name = "AlreadyDecidedError";
  static override readonly code = "already_decided";
}

/** A reviewer's refusal; never answered to an agent. */
export class StaleCardError extends APIError {
  override name = "StaleCardError";
  static override readonly code = "stale_card";
}

/** A reviewer's refusal; never answered to an agent. */
export class NotApproverError extends APIError {
  override name = "NotApproverError";
  static override readonly code = "not_approver";
}

/** A reviewer's refusal; never answered to an agent. */
export class NoLongerApproverError extends APIError {
  override name = "NoLongerApproverError";
  static override readonly code = "no_longer_approver";
}

/** A reviewer's refusal; never answered to an agent. */
export class SelfApprovalError extends APIError {
  override name = "SelfApprovalError";
  static override readonly code = "self_approval";
}

/** A reviewer's refusal; never answered to an agent. */
export class AlreadyResolvedError extends APIError {
  override name = "AlreadyResolvedError";
  static override readonly code = "already_resolved";
}

/** A redrive for an agent without a callback. */
export class CallbackNotConfiguredError extends APIError {
  override name = "CallbackNotConfiguredError";
  static override readonly code = "callback_not_configured";
}

/** A redrive of a request that has sent no callback yet. */
export class NothingToRedriveError extends APIError {
  override name = "NothingToRedriveError";
  static override readonly code = "nothing_to_redrive";
}

/** countersign cannot reach its database; calls that may be resent were, until their time ran out. */
export class UnavailableError extends APIError {
  override name = "UnavailableError";
  static override readonly code = "unavailable";
}

/** An unexpected failure on the server. */
export class InternalError extends APIError {
  override name = "InternalError";
  static override readonly code = "internal";
}

/** A method the route does not take (a call this package never makes). */
export class MethodNotAllowedError extends APIError {
  override name = "MethodNotAllowedError";
  static override readonly code = "method_not_allowed";
}

/** A body not sent as application/json (a call this package never makes). */
export class UnsupportedMediaTypeError extends APIError {
  override name = "UnsupportedMediaTypeError";
  static override readonly code = "unsupported_media_type";
}

type APIErrorClass = { new (init: APIErrorInit): APIError; readonly code: string };

/** The class of each error code. */
export const ERRORS: Readonly<Record<string, APIErrorClass>> = Object.freeze(
  Object.fromEntries(
    [
      MalformedJSONError, InvalidRequestError, InvalidEffectError, UnknownToolError, DeniedByPolicyError, KeyReusedError,
      PrunedError, UnauthorizedError, TooLargeError, NotFoundError, AlreadyDecidedError, StaleCardError, NotApproverError,
      NoLongerApproverError, SelfApprovalError, AlreadyResolvedError, CallbackNotConfiguredError, NothingToRedriveError, UnavailableError,
      InternalError, MethodNotAllowedError, UnsupportedMediaTypeError, OutcomeConflictError, NotAgentExecutedError,
    ].map((cls): [string, APIErrorClass] => [cls.code, cls]),
  ),
);

/** The request was not settled (or decided, for waitForDecision) when the wait ended; `request` is the last answer read, if any. */
export class WaitTimeoutError extends CountersignError {
  override name = "WaitTimeoutError";
  readonly ref: string;
  readonly request: Request | undefined;

  constructor(ref: string, request: Request | undefined, options?: { cause?: unknown; what?: string }) {
    const { what = "settled", ...rest } = options ?? {};
    super(`countersign: request ${ref} was not ${what} when the wait ended`, rest);
    this.ref = ref;
    this.request = request;
  }
}

/** A Countersign-Signature that does not prove countersign sent what it covers. */
export class SignatureError extends CountersignError {
  override name = "SignatureError";
}

/**
 * A receipt a verifier refuses (docs/RECEIPTS.md): `code` says why, one of
 * RECEIPT_ERROR_CODES, the same words as the Go verifier's sentinels, and
 * `claims` are the receipt's when it was signed and readable (an expired
 * receipt, one for another key, tool or body).
 */
export class ReceiptError extends CountersignError {
  override name = "ReceiptError";
  /** The refusal's code; "" on ReceiptError itself. */
  static readonly code: string = "";
  readonly code: string;
  readonly claims: ReceiptClaims | undefined;

  constructor(message: string, options?: { claims?: ReceiptClaims | undefined; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = (this.constructor as typeof ReceiptError).code;
    this.claims = options?.claims;
  }
}

/** What a receipt asserts (docs/RECEIPTS.md), its claims as signed. */
export interface ReceiptClaims {
  /** The request's idempotency key: the write's Idempotency-Key. */
  key: string;
  tool: string;
  agent: string;
  /** The lowercase hex SHA-256 of the approved effect's RFC 8785 form. */
  effect_sha256: string;
  /** A reviewer, policy:<tier> or grant:<id>. */
  decided_by: string;
  /** human, policy or grant. */
  via: string;
  policy_version: string;
  /** The approval, in seconds since the Unix epoch. */
  iat: number;
  /** When providers stop taking the receipt, in seconds since the Unix epoch. */
  exp: number;
}

/** No receipt was sent. */
export class ReceiptMissingError extends ReceiptError {
  override name = "ReceiptMissingError";
  static override readonly code = "missing";
}

/** Not a compact JWS countersign signs: its parts, header or claims do not read. */
export class ReceiptMalformedError extends ReceiptError {
  override name = "ReceiptMalformedError";
  static override readonly code = "malformed";
}

/** Signed by a key the JWKS does not hold: fetch the JWKS again after a rotation. */
export class ReceiptUnknownKeyError extends ReceiptError {
  override name = "ReceiptUnknownKeyError";
  static override readonly code = "unknown_key";
}

/** The signature does not match the receipt. */
export class ReceiptSignatureError extends ReceiptError {
  override name = "ReceiptSignatureError";
  static override readonly code = "signature";
}

/** The receipt's exp has passed. */
export class ReceiptExpiredError extends ReceiptError {
  override name = "ReceiptExpiredError";
  static override readonly code = "expired";
}

/** The receipt approves a request with another key than the write's Idempotency-Key. */
export class ReceiptOtherKeyError extends ReceiptError {
  override name = "ReceiptOtherKeyError";
  static override readonly code = "other_key";
}

/** The receipt approves a write of another tool. */
export class ReceiptOtherToolError extends ReceiptError {
  override name = "ReceiptOtherToolError";
  static override readonly code = "other_tool";
}

/** The body is not the approved effect: its RFC 8785 digest differs, or it is not one JSON value. */
export class ReceiptEffectError extends ReceiptError {
  override name = "ReceiptEffectError";
  static override readonly code = "effect";
}

/** The class of each receipt refusal's code. */
export const RECEIPT_ERRORS: Readonly<Record<string, typeof ReceiptError>> = Object.freeze(
  Object.fromEntries(
    [
      ReceiptMissingError, ReceiptMalformedError, ReceiptUnknownKeyError, ReceiptSignatureError, ReceiptExpiredError,
      ReceiptOtherKeyError, ReceiptOtherToolError, ReceiptEffectError,
    ].map((cls): [string, typeof ReceiptError] => [cls.code, cls]),
  ),
);

/**
 * A gated write that will not run: its request was not approved. `status`
 * is how it ended (rejected, expired, cancelled) and `request` the request.
 */
export class NotApprovedError extends CountersignError {
  override name = "NotApprovedError";
  readonly request: Request;
  readonly status: Request["status"];

  constructor(request: Request, message?: string) {
    super(message ?? `countersign: request ${request.id} (${request.tool}) was ${request.status}, not approved`);
    this.request = request;
    this.status = request.status;
  }
}

/**
 * A gated write a reviewer rejected. `reason` is the reviewer's words ("" when
 * none were asked for or given), `by` who decided, and `retry` what the
 * rejection means for asking again: the same intent gets the same
 * rejection; a new step asks again.
 */
export class RejectedError extends NotApprovedError {
  override name = "RejectedError";
  readonly reason: string;
  readonly by: string;
  readonly retry: string;

  constructor(request: Request) {
    const d = request.decision;
    const reason = d?.reason ?? "";
    let text = `countersign: request ${request.id} (${request.tool}) was rejected by ${d?.by ?? "a reviewer"}` +
      (reason ? `: ${reason}` : " (no reason given)");
    if (d?.retry) text += (/[.!?]$/.test(text) ? " " : ". ") + d.retry;
    super(request, text);
    this.reason = reason;
    this.by = d?.by ?? "";
    this.retry = d?.retry ?? "";
  }
}

/**
 * A gated write whose outcome countersign already holds as failed: an
 * earlier call's function threw (or reported failure), so the write is not
 * tried again under this key. `detail` is what that call reported, when
 * this process still knew it.
 */
export class WriteFailedError extends CountersignError {
  override name = "WriteFailedError";
  readonly request: Request;
  readonly detail: string;

  constructor(request: Request, detail = "") {
    super(`countersign: the write of request ${request.id} (${request.tool}) failed earlier` + (detail ? `: ${detail}` : "") +
      "; it is not tried again under the same key");
    this.request = request;
    this.detail = detail;
  }
}

/** Builds the error of an answer of status 400 or more (or any other the client does not take). */
export function errorFrom(status: number, headers: Headers, body: string): APIError {
  let code = "";
  let message = "";
  let field: string | undefined;
  let errors: Violation[] = [];
  let requestId = headers.get("Request-Id") ?? undefined;
  let finalStatus: string | undefined;
  let tools: string[] = [];
  let key: string | undefined;
  let tier: string | undefined;
  try {
    const envelope = (JSON.parse(body) as { error: Record<string, unknown> }).error;
    if (typeof envelope.code !== "string") throw new TypeError("no code");
    code = envelope.code;
    message = String(envelope.message ?? "");
    field = typeof envelope.field === "string" ? envelope.field : undefined;
    const list = Array.isArray(envelope.errors) ? (envelope.errors as Record<string, unknown>[]) : [];
    errors = list.map((v) => ({ field: String(v.field ?? ""), message: String(v.message ?? "") }));
    if (typeof envelope.request_id === "string" && envelope.request_id) requestId = envelope.request_id;
    if (typeof envelope.status === "string") finalStatus = envelope.status;
    if (Array.isArray(envelope.tools)) tools = envelope.tools.map(String);
    if (typeof envelope.key === "string") key = envelope.key;
    if (typeof envelope.tier === "string") tier = envelope.tier;
  } catch {
    // Not countersign's envelope: a proxy's page, say.
    message = `HTTP ${status}`;
    if (status === 503) code = "unavailable";
  }
  const cls = ERRORS[code] ?? APIError;
  const error = new cls({ status, code, message, field, errors, requestId, retryAfter: parseRetryAfter(headers.get("Retry-After")) });
  if (error instanceof PrunedError) error.finalStatus = finalStatus;
  if (error instanceof UnknownToolError) error.tools = tools;
  if (error instanceof DeniedByPolicyError) {
    error.key = key;
    error.tier = tier;
  }
  return error;
}

/** Reads Retry-After: delay seconds, or an HTTP date. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const text = value.trim();
  if (/^[0-9]+$/.test(text)) return Number(text);
  const when = Date.parse(text);
  if (Number.isNaN(when)) return undefined;
  return Math.max(0, (when - now) / 1000);
}
