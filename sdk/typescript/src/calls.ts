// The calls of countersign's agent API, as the Client sends them.

import { dumps } from "./canonical.js";
import { checkClientKey, hasKeyPrefix, intentKey, type Effect, type Step } from "./key.js";
import { pageFromJSON, requestFromJSON, toolFromJSON, type Page, type Request, type Tool } from "./request.js";
import type { Answer, Call } from "./transport.js";

/** How long one long-poll asks the server to hold, in seconds. */
export const POLL_WAIT = 30;

/** What request() sends: the intent, and the words a reviewer reads. E is the effect's type. */
export interface RequestParams<E extends Effect = Effect> {
  tool: string;
  effect: E;
  runId: string;
  step: Step;
  summary?: string;
  reason?: string;
  requestedFor?: string;
  idempotencyKey?: string;
}

/** The filters of list() and listPage(); every one given must hold. */
export interface ListParams {
  status?: Request["status"];
  tool?: string;
  runId?: string;
  settled?: boolean;
  /** Requests a page, 1 to 100. */
  limit?: number;
}

function path(ref: string): string {
  return "/v1/requests/" + encodeURIComponent(ref);
}

function readRequest<E extends Effect>(answer: Answer): Request<E> {
  return requestFromJSON<E>(JSON.parse(answer.body));
}

/**
 * POST /v1/requests. Safe to send again: the same bytes replay. A client key
 * countersign would refuse throws InvalidKeyError here.
 */
export function create<E extends Effect>(p: RequestParams<E>): Call<Request<E>> {
  if (p.idempotencyKey !== undefined && p.idempotencyKey !== "") {
    checkClientKey(p.idempotencyKey);
    if (hasKeyPrefix(p.idempotencyKey)) checkClientKey(p.idempotencyKey, intentKey(p.runId, p.step, p.tool, p.effect));
  }
  const intent: Record<string, unknown> = { run_id: p.runId, step: p.step, tool: p.tool, effect: p.effect };
  if (p.summary !== undefined) intent.summary = p.summary;
  if (p.reason !== undefined) intent.reason = p.reason;
  if (p.requestedFor !== undefined) intent.requested_for = p.requestedFor;
  if (p.idempotencyKey !== undefined) intent.idempotency_key = p.idempotencyKey;
  return {
    method: "POST",
    path: "/v1/requests",
    body: dumps(intent),
    retry: true,
    hold: 0,
    read: (answer) => {
      const replayed = answer.status === 200 && answer.headers.get("Idempotent-Replayed") === "true";
      return requestFromJSON<E>(JSON.parse(answer.body), replayed);
    },
  };
}

/** GET /v1/requests/{ref}. */
export function get<E extends Effect>(ref: string): Call<Request<E>> {
  return { method: "GET", path: path(ref), retry: true, hold: 0, read: readRequest<E> };
}

/**
 * GET /v1/requests/{ref}?wait=…&since=…: the request once its version is
 * past since or it is settled, or as it is when the hold ends. The server
 * holds at most `remaining` milliseconds (and POLL_WAIT), to the millisecond
 * below, so a wait with a timeout ends on time.
 */
export function poll<E extends Effect>(ref: string, since: number, remaining: number): Call<Request<E>> {
  const millis = Math.floor(Math.min(remaining, POLL_WAIT * 1000));
  const wait = millis % 1000 === 0 ? `${millis / 1000}s` : `${millis}ms`;
  const query = new URLSearchParams({ wait, since: String(since) });
  return { method: "GET", path: `${path(ref)}?${query}`, retry: true, hold: millis, read: readRequest<E> };
}

/** GET /v1/requests with the filters given. */
export function listPage(p: ListParams & { cursor?: string | null }): Call<Page> {
  const query = new URLSearchParams();
  if (p.status !== undefined) query.set("status", p.status);
  if (p.tool !== undefined) query.set("tool", p.tool);
  if (p.runId !== undefined) query.set("run_id", p.runId);
  if (p.cursor !== undefined && p.cursor !== null) query.set("cursor", p.cursor);
  if (p.settled !== undefined) query.set("settled", p.settled ? "true" : "false");
  if (p.limit !== undefined) query.set("limit", String(p.limit));
  const q = query.toString();
  return {
    method: "GET",
    path: "/v1/requests" + (q ? "?" + q : ""),
    retry: true,
    hold: 0,
    read: (answer) => pageFromJSON(JSON.parse(answer.body)),
  };
}

/** POST /v1/requests/{ref}/cancel, sent once: a first attempt that landed would make a second a refusal. */
export function cancel(ref: string): Call<Request> {
  return { method: "POST", path: path(ref) + "/cancel", retry: false, hold: 0, read: readRequest };
}

/** POST /v1/requests/{ref}/redrive, sent once. */
export function redrive(ref: string): Call<Request> {
  return { method: "POST", path: path(ref) + "/redrive", retry: false, hold: 0, read: readRequest };
}

/** What an agent reports of a write it performed itself (an agent-executed tool's). */
export interface OutcomeParams {
  status: "succeeded" | "failed";
  /** The provider's reference for the write (its id), at most 4096 bytes. */
  providerRef?: string;
  /** Words for the reviewer and the audit, at most 4096 bytes: for a failure, what went wrong. */
  detail?: string;
}

/**
 * POST /v1/requests/{ref}/outcome. Safe to send again: the same report
 * twice records one (a differing one is OutcomeConflictError).
 */
export function outcome(ref: string, p: OutcomeParams): Call<Request> {
  const body: Record<string, unknown> = { status: p.status };
  if (p.providerRef !== undefined && p.providerRef !== "") body.provider_ref = p.providerRef;
  if (p.detail !== undefined && p.detail !== "") body.detail = p.detail;
  return { method: "POST", path: path(ref) + "/outcome", body: dumps(body), retry: true, hold: 0, read: readRequest };
}

/** GET /v1/tools. */
export function tools(): Call<Tool[]> {
  return {
    method: "GET",
    path: "/v1/tools",
    retry: true,
    hold: 0,
    read: (answer) => ((JSON.parse(answer.body) as { tools: unknown[] }).tools ?? []).map(toolFromJSON),
  };
}
