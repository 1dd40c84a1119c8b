// HTTP exchanges with countersign, and when one is sent again.

import { APIError, CountersignError, InternalError, UnavailableError, errorFrom } from "./errors.js";

/** The most of an answer that is read. */
const MAX_ANSWER_BYTES = 8 << 20;

/** An exchange that never reached an answer: the connection failed, or its timeout passed. */
export class ConnectionError extends CountersignError {
  override name = "ConnectionError";
}

/** An exchange whose answer did not come within the client's timeout (and a long-poll's hold). */
export class ConnectionTimeoutError extends ConnectionError {
  override name = "ConnectionTimeoutError";
}

/** One HTTP answer of status 2xx, read whole. */
export interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

/**
 * One call of the API: what is sent, whether it may be sent again, and how
 * its answer is read.
 */
export interface Call<T> {
  method: "GET" | "POST";
  path: string;
  body?: string;
  read: (answer: Answer) => T;
  /** Whether the same bytes may be sent again after a network error or a 503. */
  retry: boolean;
  /** Milliseconds a long-poll's answer may take on top of the timeout. */
  hold: number;
}

export interface TransportOptions {
  url: string;
  token: string;
  userAgent: string;
  /** Milliseconds one exchange may take (a long-poll gets its hold on top). */
  timeout: number;
  fetch: typeof fetch;
  firstBackoff?: number;
  maxBackoff?: number;
}

/**
 * Sends calls to one countersign server as one agent. A call that may be
 * sent again is, with the same bytes, after a network error, an exchange's
 * timeout or a 503 (a read also after a 500), following a jittered
 * exponential backoff, or the answer's Retry-After when that is longer,
 * until its deadline would pass; then the last error is thrown. An aborted
 * signal ends the call at once with the signal's reason.
 */
export class Transport {
  private readonly base: string;
  private readonly token: string;
  private readonly userAgent: string;
  private readonly timeout: number;
  private readonly fetch: typeof fetch;
  private readonly firstBackoff: number;
  private readonly maxBackoff: number;

  constructor(options: TransportOptions) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(options.url);
    } catch {
      parsed = undefined;
    }
    if (parsed === undefined || (parsed.protocol !== "http:" && parsed.protocol !== "https:")) {
      throw new TypeError(`the countersign URL must be an http or https URL, not ${JSON.stringify(options.url)}`);
    }
    this.base = options.url.replace(/\/+$/, "");
    this.token = options.token;
    this.userAgent = options.userAgent;
    this.timeout = options.timeout;
    this.fetch = options.fetch;
    this.firstBackoff = options.firstBackoff ?? 200;
    this.maxBackoff = options.maxBackoff ?? 5000;
  }

  /** Runs call, retrying until deadline (a performance.now() value). */
  async run<T>(call: Call<T>, deadline: number, signal?: AbortSignal): Promise<T> {
    let backoff = this.firstBackoff;
    for (;;) {
      let pause: number;
      try {
        return call.read(await this.exchange(call, signal));
      } catch (e) {
        pause = this.pause(call, e, backoff, deadline);
      }
      await sleep(pause, signal);
      backoff = Math.min(2 * backoff, this.maxBackoff);
    }
  }

  // How long to wait before sending call again after error, or throw error
  // when it is not to be sent again.
  private pause(call: Call<unknown>, error: unknown, backoff: number, deadline: number): number {
    // A read changes nothing, so a 500 is worth asking again, as the Go
    // client does; a write's 500 is the caller's to judge.
    const retried =
      error instanceof ConnectionError ||
      error instanceof UnavailableError ||
      (call.method === "GET" && error instanceof InternalError);
    if (!call.retry || !retried) throw error;
    // Jitter spreads the retries of many agents after one outage; a
    // Retry-After the server sent is waited in full.
    let pause = backoff / 2 + Math.random() * (backoff / 2);
    if (error instanceof APIError && error.retryAfter !== undefined) pause = Math.max(pause, error.retryAfter * 1000);
    if (performance.now() + pause > deadline) throw error;
    return pause;
  }

  /** Sends call once; an answer other than 2xx throws its APIError. */
  async exchange(call: Call<unknown>, signal?: AbortSignal): Promise<Answer> {
    signal?.throwIfAborted();
    const headers: Record<string, string> = {
      Authorization: "Bearer " + this.token,
      Accept: "application/json",
      "User-Agent": this.userAgent,
    };
    if (call.body !== undefined) headers["Content-Type"] = "application/json";
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort();
    }, this.timeout + call.hold);
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const resp = await this.fetch(this.base + call.path, {
        method: call.method,
        headers,
        body: call.body,
        signal: controller.signal,
        // countersign never redirects an agent; a redirect is someone
        // else's answer, and following it would send the token elsewhere.
        redirect: "manual",
      });
      const body = await readText(resp);
      if (resp.status < 200 || resp.status >= 300) throw errorFrom(resp.status, resp.headers, body);
      return { status: resp.status, headers: resp.headers, body };
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      if (e instanceof CountersignError) throw e;
      const what = `countersign: ${call.method} ${call.path.split("?")[0]}`;
      if (timedOut) throw new ConnectionTimeoutError(`${what}: no answer within ${this.timeout + call.hold} ms`, { cause: e });
      throw new ConnectionError(`${what}: ${e instanceof Error ? e.message : String(e)}`, { cause: e });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }
}

// readText reads an answer's body as UTF-8, up to MAX_ANSWER_BYTES.
async function readText(resp: Response): Promise<string> {
  if (resp.body === null) return "";
  const reader = resp.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel();
      throw new CountersignError(`countersign: an answer over ${MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.length;
  }
  return new TextDecoder().decode(all);
}

/** Waits ms milliseconds, or until signal aborts (then throws its reason). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
