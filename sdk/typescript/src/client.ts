// The client an agent calls countersign with.

import * as calls from "./calls.js";
import type { ListParams, OutcomeParams, RequestParams } from "./calls.js";
import { gated, type GatedCallOptions, type GatedFunction, type GatedOptions, type GatedParams, type GatedResult } from "./gated.js";
import { UnavailableError, WaitTimeoutError } from "./errors.js";
import type { Effect } from "./key.js";
import type { Page, Request, Tool } from "./request.js";
import { ConnectionError, Transport, type Call } from "./transport.js";
import { VERSION } from "./version.js";

/**
 * The most reviewer's edits a wait follows, from an edited request to its
 * edit (supersededBy), before it returns the edited one as it is.
 */
export const MAX_EDIT_HOPS = 5;

export interface ClientOptions {
  /** countersign's base URL, http or https. */
  url: string;
  /** The agent's bearer token. */
  token: string;
  /** Milliseconds one exchange may take; a long-poll gets its hold (30 s) on top. 30 000 by default. */
  timeout?: number;
  /** Milliseconds a call that may be sent again keeps sending it after a network error or a 503. 60 000 by default. */
  retryFor?: number;
  /** The fetch to send with; the global one by default. */
  fetch?: typeof fetch;
}

/** What every call takes. */
export interface CallOptions {
  /** Ends the call, and any retry or poll it would make, with the signal's reason. */
  signal?: AbortSignal;
}

export interface WaitOptions extends CallOptions {
  /** Milliseconds to wait before throwing WaitTimeoutError; no limit by default. */
  timeout?: number;
}

/**
 * Calls one countersign server as one agent (its bearer token).
 *
 * request, get, list and tools send the same bytes again after a network
 * error, an exchange's timeout or a 503 (the reads also after a 500), for
 * `retryFor`; wait retries until its own timeout. cancel and redrive are
 * sent once: a first attempt that landed would make a second one a refusal.
 * It holds no state between calls and may be shared.
 */
export class Client {
  private readonly transport: Transport;
  private readonly retryFor: number;

  constructor(options: ClientOptions) {
    const fetcher = options.fetch ?? globalThis.fetch;
    if (typeof fetcher !== "function") throw new TypeError("no fetch: give one as options.fetch");
    // Called as a plain function: a browser's or a worker's fetch refuses
    // to run as another object's method.
    const send: typeof fetch = (input, init) => fetcher(input, init);
    this.retryFor = options.retryFor ?? 60_000;
    this.transport = new Transport({
      url: options.url,
      token: options.token,
      userAgent: `countersign-typescript/${VERSION}`,
      timeout: options.timeout ?? 30_000,
      fetch: send,
    });
  }

  /**
   * Asks for a write; returns the request, created (201) or, when its key
   * is already stored, the one it names (`replayed` set), whatever its
   * state. The key is intentKey(runId, step, tool, effect) unless
   * idempotencyKey is given. A network error or a 503 sends the same bytes
   * again, which replays rather than creating a second request.
   */
  request(params: RequestParams, options?: CallOptions): Promise<Request>;
  /**
   * With the effect's type, `client.request<Credit>(…)`: the effect must be
   * one, and the request's effect is typed as one.
   */
  request<E extends Effect>(params: RequestParams<E>, options?: CallOptions): Promise<Request<E>>;
  async request<E extends Effect>(params: RequestParams<E>, options: CallOptions = {}): Promise<Request<E>> {
    return this.run(calls.create(params), options);
  }

  /** Returns the request named by ref: its id or its full key. E is the effect's type, if known. */
  async get<E extends Effect = Record<string, unknown>>(ref: string, options: CallOptions = {}): Promise<Request<E>> {
    return this.run(calls.get<E>(ref), options);
  }

  /**
   * Returns one page of this agent's requests (an admin agent's: every
   * agent's), newest first, filtered by every parameter given; pass its
   * nextCursor as cursor for the next page.
   */
  async listPage(params: ListParams & { cursor?: string | null } = {}, options: CallOptions = {}): Promise<Page> {
    return this.run(calls.listPage(params), options);
  }

  /**
   * Iterates over this agent's requests, newest first, filtered by every
   * parameter given, reading page after page as the iteration needs them:
   * `for await (const req of client.list({ runId }))`. Paging is by
   * keyset: requests made meanwhile neither repeat nor shift the listing.
   */
  async *list(params: ListParams = {}, options: CallOptions = {}): AsyncGenerator<Request, void, undefined> {
    let cursor: string | null = null;
    do {
      const page: Page = await this.listPage({ ...params, cursor }, options);
      yield* page.data;
      cursor = page.nextCursor;
    } while (cursor);
  }

  /**
   * Returns the request named by ref once it is settled (rejected, expired,
   * cancelled, or its execution succeeded or failed), long-polling from the
   * version it last saw so no change is missed. With a timeout it throws
   * WaitTimeoutError when that passes first; without, it waits as long as
   * it takes. A request whose write waits for a person (needs_review) is
   * not settled. A request a reviewer edited (status edited) never runs:
   * the wait follows its supersededBy to the edit and returns the edit once
   * settled, with editedFrom naming the keys it followed (at most
   * MAX_EDIT_HOPS edits; past them it returns the edited request as it is).
   */
  async wait<E extends Effect = Record<string, unknown>>(ref: string, options: WaitOptions = {}): Promise<Request<E>> {
    return this.waitUntil<E>(ref, (req) => req.settled, "settled", options);
  }

  /**
   * Returns the request named by ref once it is decided: approved (an
   * agent-executed tool's with its receipt), rejected, expired or
   * cancelled, whatever its execution. As wait, it follows a reviewer's
   * edit, and with a timeout it throws WaitTimeoutError when that passes
   * first.
   */
  async waitForDecision<E extends Effect = Record<string, unknown>>(ref: string, options: WaitOptions = {}): Promise<Request<E>> {
    return this.waitUntil<E>(ref, (req) => req.status !== "pending", "decided", options);
  }

  private async waitUntil<E extends Effect>(ref: string, done: (req: Request<E>) => boolean, what: string, options: WaitOptions): Promise<Request<E>> {
    const deadline = options.timeout === undefined ? Infinity : performance.now() + options.timeout;
    // A request a reviewer edited never runs: the wait goes on with the
    // edit (supersededBy), a few edits at most, within the one timeout.
    let req = await this.waitOne<E>(ref, done, what, deadline, options.signal);
    const editedFrom: string[] = [];
    while (req.status === "edited" && req.supersededBy !== null && editedFrom.length < MAX_EDIT_HOPS) {
      editedFrom.push(req.key);
      req = await this.waitOne<E>(req.supersededBy, done, what, deadline, options.signal);
    }
    return editedFrom.length > 0 ? { ...req, editedFrom } : req;
  }

  private async waitOne<E extends Effect>(ref: string, done: (req: Request<E>) => boolean, what: string, deadline: number, signal: AbortSignal | undefined): Promise<Request<E>> {
    let req: Request<E> | undefined;
    try {
      // A plain read first: a settled request needs no poll, and its
      // version is where the first poll starts.
      req = await this.transport.run(calls.get<E>(ref), deadline, signal);
      let remaining: number;
      // The server holds whole milliseconds: less than one left is no poll.
      while (!done(req) && (remaining = deadline - performance.now()) >= 1) {
        req = await this.transport.run(calls.poll<E>(ref, req.version, remaining), deadline, signal);
      }
    } catch (e) {
      // Retries end only at the deadline: the wait is over.
      if (e instanceof ConnectionError || e instanceof UnavailableError) throw new WaitTimeoutError(ref, untyped(req), { cause: e, what });
      throw e;
    }
    if (!done(req)) throw new WaitTimeoutError(ref, untyped(req), { what });
    return req;
  }

  /**
   * request(), then wait() until the request is settled: the calls an agent
   * makes, in one. Retries resend the same intent, so the key never
   * changes; timeout bounds the wait.
   */
  requestAndWait(params: RequestParams, options?: WaitOptions): Promise<Request>;
  /** With the effect's type, as request. */
  requestAndWait<E extends Effect>(params: RequestParams<E>, options?: WaitOptions): Promise<Request<E>>;
  async requestAndWait<E extends Effect>(params: RequestParams<E>, options: WaitOptions = {}): Promise<Request<E>> {
    const req = await this.request<E>(params, options);
    return req.settled && req.status !== "edited" ? req : this.wait<E>(req.id, options);
  }

  /**
   * Reports the outcome of a write the agent performed itself (an
   * agent-executed tool's, once approved): succeeded or failed, with the
   * provider's reference and words for the reviewer. Sent again after a
   * network error or a 503: the same report twice records one. A differing
   * report after the first throws OutcomeConflictError; a request that
   * awaits no outcome from its agent, NotAgentExecutedError.
   */
  async reportOutcome<E extends Effect = Record<string, unknown>>(ref: string, outcome: OutcomeParams, options: CallOptions = {}): Promise<Request<E>> {
    return this.run(calls.outcome(ref, outcome), options) as Promise<Request<E>>;
  }

  /**
   * Returns a function that performs tool's write with fn once it is
   * approved, for an agent-executed tool (execute: agent):
   *
   *     const credit = client.gated("billing.credit", async (effect, { key, receipt }) => {
   *       const res = await provider.credit(effect, { "Idempotency-Key": key, "Countersign-Receipt": receipt });
   *       return { providerRef: res.id };
   *     });
   *     const { value } = await credit({ runId, step: 6, effect, summary: "Credit 42.00 USD" });
   *
   * Each call requests the write (the key from runId and step, as
   * request()), waits for the decision, and on approval calls fn with the
   * approved effect, the key and the receipt; then it reports the outcome:
   * succeeded, with the string `providerRef` and `detail` of what fn
   * returned, if it returned an object with them; or, when fn throws,
   * failed with the error's message, and the error is thrown again. A
   * rejection throws RejectedError (its reason, and what a retry does);
   * an expiry or a cancellation NotApprovedError. A request a reviewer
   * edited and approved is followed to the edit: fn is called with the
   * edit's effect (the reviewer's, not the one asked for), its key and its
   * receipt, the outcome is reported on the edit, and the result's
   * request.editedFrom names the original, which is never written.
   *
   * fn runs at most once per key once its outcome is recorded: the outcome
   * is written durably to a journal (options.journalDir) before it is
   * reported, so a call again after the process stopped in between reports
   * it without calling fn, as does a call that finds countersign holding
   * the outcome already (`replayed`; a recorded failure throws
   * WriteFailedError). A process that stops while fn runs calls it again on
   * the next call: send the write with the key as Idempotency-Key so the
   * provider takes it once.
   */
  gated<E extends Effect = Record<string, unknown>, T = unknown>(
    tool: string,
    fn: GatedFunction<E, T>,
    options: GatedOptions = {},
  ): (params: GatedParams<E>, options?: GatedCallOptions) => Promise<GatedResult<T, E>> {
    return gated<E, T>(this, tool, fn, options);
  }

  /** Withdraws a pending request; one no longer pending throws AlreadyDecidedError. Sent once. */
  async cancel(ref: string, options: CallOptions = {}): Promise<Request> {
    return this.run(calls.cancel(ref), options);
  }

  /**
   * Sends the request's newest callback again, due at once; throws
   * CallbackNotConfiguredError or NothingToRedriveError when there is none.
   * Sent once.
   */
  async redrive(ref: string, options: CallOptions = {}): Promise<Request> {
    return this.run(calls.redrive(ref), options);
  }

  /** Returns the tools this agent may request. */
  async tools(options: CallOptions = {}): Promise<Tool[]> {
    return this.run(calls.tools(), options);
  }

  private run<T>(call: Call<T>, options: CallOptions): Promise<T> {
    return this.transport.run(call, performance.now() + this.retryFor, options.signal);
  }
}

// untyped is a request as an error carries it: its effect's type was the
// caller's word, which an error caught elsewhere does not know.
function untyped(req: Request<object> | undefined): Request | undefined {
  return req as Request | undefined;
}
