// Gated functions: a write the agent performs itself (an agent-executed
// tool, `execute: agent`), run only once countersign approved it, with the
// receipt its provider checks, and its outcome reported back exactly once.

import type { OutcomeParams, RequestParams } from "./calls.js";
import { CountersignError, NotApprovedError, OutcomeConflictError, RejectedError, WriteFailedError } from "./errors.js";
import { DEFAULT_JOURNAL_DIR, Journal, type JournalEntry } from "./journal.js";
import { intentKey, type Effect } from "./key.js";
import type { Request } from "./request.js";

/** What a gated function is called with besides the effect, once its write is approved. */
export interface Approval<E extends Effect = Record<string, unknown>> {
  /** The request's key: send the write with it as Idempotency-Key, so the provider takes it once. */
  key: string;
  /** The signed receipt: send it in Countersign-Receipt, for the provider to check (ReceiptVerifier). */
  receipt: string;
  /** The approved request. */
  request: Request<E>;
  /** The call's signal, if it was given one. */
  signal: AbortSignal | undefined;
}

/**
 * The function a gated write runs: it performs the approved effect and
 * returns, or throws when the write failed. A returned object's string
 * `providerRef` (the provider's id for the write) and `detail` are
 * reported with the outcome; a thrown error is reported `failed` with its
 * message as the detail.
 */
export type GatedFunction<E extends Effect, T> = (effect: E, approval: Approval<E>) => T | Promise<T>;

/** What a gated write is called with: request()'s parameters but the tool. */
export type GatedParams<E extends Effect = Effect> = Omit<RequestParams<E>, "tool">;

export interface GatedOptions {
  /**
   * The directory of the outcome journal, where an outcome waits, written
   * durably, between the function's return and countersign recording it;
   * .countersign-outcomes in the working directory by default. Give every
   * process that may retry the same writes the same directory.
   */
  journalDir?: string;
}

export interface GatedCallOptions {
  /** Ends the call (the request, the wait, the report) with the signal's reason; the function gets it too. */
  signal?: AbortSignal;
  /** Milliseconds to wait for the decision before throwing WaitTimeoutError; no limit by default. */
  timeout?: number;
}

/** How a gated write ended, when it succeeded. */
export interface GatedResult<T, E extends Effect = Record<string, unknown>> {
  /** The request, with its outcome recorded (execution succeeded). */
  request: Request<E>;
  /** What the function returned; undefined when it did not run in this call (replayed). */
  value: T | undefined;
  /** The provider's reference countersign recorded, or null. */
  providerRef: string | null;
  /**
   * True when the function did not run in this call: countersign already
   * held the outcome, or the journal did (a process that stopped after the
   * function returned), and this call only reported it.
   */
  replayed: boolean;
}

/** The calls a gated write makes, as the Client has them. */
export interface GatedClient {
  request<E extends Effect>(params: RequestParams<E>, options?: { signal?: AbortSignal }): Promise<Request<E>>;
  waitForDecision<E extends Effect>(ref: string, options?: GatedCallOptions): Promise<Request<E>>;
  reportOutcome<E extends Effect>(ref: string, outcome: OutcomeParams, options?: { signal?: AbortSignal }): Promise<Request<E>>;
}

/** The most bytes countersign takes in provider_ref and in detail. */
const MAX_OUTCOME_FIELD = 4096;

/**
 * Returns the gated write of tool with fn: see Client.gated.
 */
export function gated<E extends Effect, T>(
  client: GatedClient,
  tool: string,
  fn: GatedFunction<E, T>,
  options: GatedOptions = {},
): (params: GatedParams<E>, options?: GatedCallOptions) => Promise<GatedResult<T, E>> {
  if (typeof fn !== "function") throw new TypeError("gated needs the function that performs the write");
  const journal = new Journal(options.journalDir ?? defaultJournalDir());
  return async (params, callOptions = {}) => {
    const key = params.idempotencyKey ? params.idempotencyKey : intentKey(params.runId, params.step, tool, params.effect);
    // Calls of one key in this process take turns: the second finds the
    // first's outcome instead of calling fn alongside it.
    const turn = `${journal.dir}\u0000${key}`;
    for (let ahead = inflight.get(turn); ahead !== undefined; ahead = inflight.get(turn)) await ahead;
    const call = perform(params, callOptions, key);
    const done = call.then(() => undefined, () => undefined);
    inflight.set(turn, done);
    try {
      return await call;
    } finally {
      if (inflight.get(turn) === done) inflight.delete(turn);
    }
  };

  async function perform(params: GatedParams<E>, callOptions: GatedCallOptions, key: string): Promise<GatedResult<T, E>> {
    // key becomes the edit's when a reviewer edited the request.
    const { signal } = callOptions;
    let req = await client.request<E>({ ...params, tool }, { signal });
    if (req.key !== key) throw new CountersignError(`countersign: request ${req.id} has key ${req.key}, not ${key}`);
    for (let waited = false; ; waited = true) {
      // countersign holds the outcome already: an earlier call reported it.
      const recorded = outcomeOf(req);
      if (recorded !== undefined) {
        await journal.remove(key);
        return recorded;
      }
      // The journal holds it: an earlier call's function returned, and its
      // process stopped before countersign recorded the outcome.
      const entry = await journal.read(key);
      if (entry !== undefined && entry.request === req.id) return report(entry, true);
      // An edited request is followed to its edit, once: a wait that
      // returns one edited still ran out of edits to follow.
      if (req.status !== "pending" && (req.status !== "edited" || waited)) break;
      req = await client.waitForDecision<E>(req.id, callOptions);
      key = req.key; // a reviewer's edit has a key of its own
    }
    switch (req.status) {
      case "approved":
        break;
      case "rejected":
        throw new RejectedError(req as unknown as Request);
      default:
        throw new NotApprovedError(req as unknown as Request);
    }
    if (req.receipt === null) {
      throw new CountersignError(`countersign: ${tool} is not an agent-executed tool (execute: agent): countersign sends its writes itself, so a gated function never runs them`);
    }
    if (req.execution?.state !== "ready") {
      throw new CountersignError(`countersign: the write of request ${req.id} is ${req.execution?.state ?? "not ready"}, with no outcome this process holds: ` +
        "it is not performed again (a write with no outcome within the tool's outcome_timeout waits for a person)");
    }

    let value: T;
    try {
      value = await fn(req.effect, { key, receipt: req.receipt, request: req, signal });
    } catch (e) {
      const entry: JournalEntry = { key, request: req.id, status: "failed", providerRef: "", detail: truncate(e instanceof Error ? e.message : String(e)) };
      await journal.write(entry);
      // fn's error is the one to throw: a report that failed leaves the
      // outcome in the journal, for the next call to report.
      await report(entry, false).catch(() => undefined);
      throw e;
    }
    const { providerRef, detail } = described(value);
    await journal.write({ key, request: req.id, status: "succeeded", providerRef, detail });
    const result = await report({ key, request: req.id, status: "succeeded", providerRef, detail }, false);
    return { ...result, value };

    // report sends entry to countersign and removes it from the journal
    // once countersign holds an outcome (this one, or another reported
    // first: OutcomeConflictError).
    async function report(entry: JournalEntry, replayed: boolean): Promise<GatedResult<T, E>> {
      let done: Request<E>;
      try {
        done = await client.reportOutcome<E>(entry.request, { status: entry.status, providerRef: entry.providerRef, detail: entry.detail }, { signal });
      } catch (e) {
        if (e instanceof OutcomeConflictError) await journal.remove(entry.key);
        throw e;
      }
      await journal.remove(entry.key);
      if (entry.status === "failed") throw new WriteFailedError(done as unknown as Request, entry.detail);
      const request = req.editedFrom.length > 0 ? { ...done, editedFrom: req.editedFrom } : done;
      return { request, value: undefined, providerRef: done.execution?.providerRef ?? null, replayed };
    }
  }

  function outcomeOf(r: Request<E>): GatedResult<T, E> | undefined {
    switch (r.execution?.state) {
      case "succeeded":
        return { request: r, value: undefined, providerRef: r.execution.providerRef, replayed: true };
      case "failed":
        throw new WriteFailedError(r as unknown as Request);
      default:
        return undefined;
    }
  }
}

// The gated calls in flight in this process, by journal and key.
const inflight = new Map<string, Promise<void>>();

// described reads providerRef and detail off what a gated function returned.
function described(value: unknown): { providerRef: string; detail: string } {
  if (typeof value !== "object" || value === null) return { providerRef: "", detail: "" };
  const v = value as { providerRef?: unknown; detail?: unknown };
  return {
    providerRef: typeof v.providerRef === "string" ? truncate(v.providerRef) : "",
    detail: typeof v.detail === "string" ? truncate(v.detail) : "",
  };
}

// truncate keeps the most of text countersign takes (4096 bytes of UTF-8),
// whole characters only, so a long message never makes the report refused.
function truncate(text: string): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= MAX_OUTCOME_FIELD) return text;
  let end = MAX_OUTCOME_FIELD - 3;
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return new TextDecoder().decode(bytes.slice(0, end)) + "…";
}

function defaultJournalDir(): string {
  const cwd = (globalThis as { process?: { cwd?: () => string } }).process?.cwd?.();
  if (cwd === undefined) throw new TypeError("gated functions keep an outcome journal on disk: give options.journalDir");
  return `${cwd}/${DEFAULT_JOURNAL_DIR}`;
}
