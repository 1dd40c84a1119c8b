// Requests and tools as countersign represents them, in camelCase, times
// as Date. The effect is as the server returns it: its numbers all hold
// their value as a JavaScript number, since the server accepts no other.

export type Status = "pending" | "approved" | "rejected" | "expired" | "cancelled" | "edited";
export type ExecutionState = "ready" | "claimed" | "succeeded" | "failed" | "unknown" | "needs_review" | "superseded";
export type Verdict = "approve" | "reject";

/** The standing decision of the request's latest decided round. */
export interface Decision {
  verdict: Verdict;
  /** A reviewer; policy:<rule> or grant:<id> for a decision made on arrival. */
  by: string;
  at: Date;
  /** slack, inbox, …; policy or grant for a decision made on arrival. */
  via: string;
  round: number;
  /** The deciding reviewer's reason; "" when none was asked for or given. */
  reason: string;
  /** On a rejection, what it means for asking again (a new step asks again); "" on an approval. */
  retry: string;
}

/** The provider's last answer: its status, and its JSON body (or the body as a string when it was not JSON). */
export interface ProviderResponse {
  status: number;
  body: unknown;
}

/** The request's latest execution (docs/STATES.md). */
export interface Execution {
  state: ExecutionState;
  attempts: number;
  code: string | null;
  providerRef: string | null;
  response: ProviderResponse | null;
}

/** Where the request's newest callback delivery stands. */
export interface Callback {
  /** pending, delivered, failed; delivering in a callback's own body. */
  state: "pending" | "delivered" | "failed" | "delivering";
  attempts: number;
  lastStatus: number | null;
}

/**
 * The policy's verdict before any review: allow (approved on arrival, no one
 * asked), deny (refused: the post threw DeniedByPolicyError) or ask.
 */
export type PolicyVerdict = "allow" | "deny" | "ask";

/** How the request's rounds are decided, frozen when it was stored. */
export interface RequestPolicy {
  verdict: PolicyVerdict;
  /** Distinct approvers a round needs; 0 when the policy decided alone. */
  approvals: number;
  approvers: string[];
  /** The index of the tool's tier that matched, or null. */
  tier: number | null;
  /** The rule that decided: a tier's name, or "default" for the tool's own. */
  tierName: string;
  /** The digest of the tool's rules when the request arrived (sha256:…). */
  version: string;
}

/** One vote of the current round. */
export interface Vote {
  by: string;
  verdict: Verdict;
  at: Date;
  reason: string;
}

/**
 * A request as GET /v1/requests/{ref} represents it. E is the effect's type,
 * for a caller that knows it (`client.get<Credit>(ref)`); the SDK does not
 * check the effect against it.
 */
export interface Request<E extends object = Record<string, unknown>> {
  id: string;
  key: string;
  keyShort: string;
  status: Status;
  round: number;
  runId: string;
  step: number | string;
  tool: string;
  effect: E;
  summary: string;
  reason: string;
  requestedBy: string;
  requestedFor: string | null;
  payloadHash: string;
  createdAt: Date;
  expiresAt: Date;
  decision: Decision | null;
  execution: Execution | null;
  /** True once the outcome can no longer change: rejected, expired, cancelled, or an execution that succeeded or failed. */
  settled: boolean;
  /** Whether the write happened: the execution succeeded. */
  succeeded: boolean;
  /** Grows with every change; wait() long-polls from it. */
  version: number;
  callback: Callback | null;
  policy: RequestPolicy | null;
  /** The current round's votes, oldest first. */
  votes: Vote[];
  /**
   * An agent-executed tool's approved request: the signed receipt (a
   * compact JWS) the agent sends its provider in Countersign-Receipt with
   * the write. null otherwise.
   */
  receipt: string | null;
  /**
   * When the status is edited: the key of the request a reviewer's edit
   * replaced this one with (its effect changed, its own key). This request
   * never runs; wait() and waitForDecision() follow it. null otherwise.
   */
  supersededBy: string | null;
  /** On a reviewer's edit: the key of the request it replaced; null otherwise. */
  supersedes: string | null;
  /**
   * The keys of the edited requests a wait followed (through supersededBy)
   * to reach this one, the one waited for first; empty when none was edited.
   */
  editedFrom: string[];
  /** True when request() found the key already stored (200, Idempotent-Replayed) rather than creating it (201). */
  replayed: boolean;
}

/** One page of GET /v1/requests: the requests, newest first, and the cursor of the next page (null on the last). */
export interface Page {
  data: Request[];
  nextCursor: string | null;
}

/** A tool's approval policy. */
export interface Policy {
  approvals: number;
  approvers: string[];
}

/** A tool this agent may request. */
export interface Tool {
  name: string;
  description: string;
  reversible: boolean;
  policy: Policy;
  /** The JSON Schema (2020-12) an effect must satisfy, if the tool has one. */
  effectSchema: Record<string, unknown> | null;
}

// The server's JSON, as read: every member may be missing from an answer
// this version does not expect, so each read says what it needs.
type JSONObject = Record<string, unknown>;

function object(v: unknown, what: string): JSONObject {
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new TypeError(`countersign: ${what} is not an object`);
  return v as JSONObject;
}

function time(v: unknown): Date {
  const d = new Date(String(v));
  if (Number.isNaN(d.getTime())) throw new TypeError(`countersign: not an RFC 3339 time: ${String(v)}`);
  return d;
}

function orNull<T>(v: unknown, read: (o: JSONObject) => T, what: string): T | null {
  return v === null || v === undefined ? null : read(object(v, what));
}

function decision(d: JSONObject): Decision {
  return {
    verdict: d.verdict as Verdict, by: String(d.by), at: time(d.at), via: String(d.via), round: Number(d.round),
    reason: String(d.reason ?? ""), retry: String(d.retry ?? ""),
  };
}

function execution(d: JSONObject): Execution {
  const r = d.response;
  return {
    state: d.state as ExecutionState, attempts: Number(d.attempts), code: (d.code as string | undefined) ?? null,
    providerRef: (d.provider_ref as string | undefined) ?? null,
    response: orNull(r, (o) => ({ status: Number(o.status), body: o.body }), "response"),
  };
}

function callback(d: JSONObject): Callback {
  return {
    state: d.state as Callback["state"], attempts: Number(d.attempts),
    lastStatus: (d.last_status as number | null | undefined) ?? null,
  };
}

function vote(d: JSONObject): Vote {
  return { by: String(d.by), verdict: d.verdict as Verdict, at: time(d.at), reason: String(d.reason ?? "") };
}

/**
 * Reads a request's representation: an answer of the API, or the parsed
 * body of a callback (verify its signature first).
 */
export function requestFromJSON<E extends object = Record<string, unknown>>(json: unknown, replayed = false): Request<E> {
  const d = object(json, "a request");
  const exec = orNull(d.execution, execution, "execution");
  return {
    id: String(d.id), key: String(d.key), keyShort: String(d.key_short), status: d.status as Status,
    round: Number(d.round), runId: String(d.run_id), step: d.step as number | string, tool: String(d.tool),
    effect: object(d.effect, "effect") as E, summary: String(d.summary ?? ""), reason: String(d.reason ?? ""),
    requestedBy: String(d.requested_by), requestedFor: (d.requested_for as string | undefined) ?? null,
    payloadHash: String(d.payload_hash), createdAt: time(d.created_at), expiresAt: time(d.expires_at),
    decision: orNull(d.decision, decision, "decision"), execution: exec, settled: d.settled === true,
    succeeded: exec?.state === "succeeded", version: Number(d.version),
    callback: orNull(d.callback, callback, "callback"),
    policy: orNull(d.policy, (p) => ({
      // A request stored before verdicts was asked.
      verdict: (p.verdict as PolicyVerdict | undefined) || "ask",
      approvals: Number(p.approvals), approvers: (p.approvers as string[] | undefined) ?? [],
      tier: (p.tier as number | null | undefined) ?? null,
      tierName: String(p.tier_name ?? ""), version: String(p.version ?? ""),
    }), "policy"),
    votes: ((d.votes as unknown[] | null | undefined) ?? []).map((v) => vote(object(v, "vote"))),
    receipt: typeof d.receipt === "string" && d.receipt !== "" ? d.receipt : null,
    supersededBy: typeof d.superseded_by === "string" && d.superseded_by !== "" ? d.superseded_by : null,
    supersedes: typeof d.supersedes === "string" && d.supersedes !== "" ? d.supersedes : null,
    editedFrom: [],
    replayed,
  };
}

/** The members of a request's representation that requestFromJSON reads. */
export const REQUEST_MEMBERS: readonly string[] = [
  "id", "key", "key_short", "status", "round", "run_id", "step", "tool", "effect", "summary", "reason",
  "requested_by", "requested_for", "payload_hash", "created_at", "expires_at", "decision", "execution",
  "settled", "version", "callback", "policy", "votes", "receipt", "superseded_by", "supersedes",
];

export function pageFromJSON(json: unknown): Page {
  const d = object(json, "a page");
  return {
    data: ((d.data as unknown[] | undefined) ?? []).map((r) => requestFromJSON(r)),
    nextCursor: (d.next_cursor as string | null | undefined) ?? null,
  };
}

export function toolFromJSON(json: unknown): Tool {
  const d = object(json, "a tool");
  const p = object(d.policy, "a policy");
  return {
    name: String(d.name), description: String(d.description ?? ""), reversible: d.reversible === true,
    policy: { approvals: Number(p.approvals), approvers: (p.approvers as string[] | undefined) ?? [] },
    effectSchema: (d.effect_schema as Record<string, unknown> | undefined) ?? null,
  };
}
