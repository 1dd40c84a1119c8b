// Gated functions against a real countersign (test/local-server.ts): the
// agent-executed tool sdk.payout, decided with the package's testing
// helpers (countersign approve|reject), its writes sent to a provider that
// checks their receipts against the server's JWKS.
//
// The crash test runs the agent as a child process (gated-child.ts) whose
// client talks to countersign through a proxy that holds its POST
// …/outcome unanswered; once the provider took the write and the report is
// held, the child is killed (SIGKILL), then run again straight at
// countersign.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { createServer, request as forward, type IncomingMessage, type Server as HTTPServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { after, before, describe, test } from "node:test";

import {
  Client, CountersignError, fetchVerifier, intentKey, NotFoundError, ReceiptEffectError, RejectedError, WriteFailedError, type ReceiptVerifier,
  type Request,
} from "@countersign/client";
import { approve, LocalReviewError, reject } from "@countersign/client/testing";
import { Journal } from "../src/journal.js";
import { AgentProvider, pay } from "./agent-provider.js";
import { Server, TOKEN } from "./local-server.js";

let server: Server;
let client: Client;
let verifier: ReceiptVerifier;
let provider: AgentProvider;
let journalDir: string;
before(async () => {
  server = await Server.start();
  client = new Client({ url: server.url, token: TOKEN, timeout: 10_000 });
  verifier = await fetchVerifier(server.url + "/.well-known/jwks.json");
  provider = await AgentProvider.start(verifier, "sdk.payout");
  journalDir = mkdtempSync(join(tmpdir(), "countersign-journal-"));
});
after(async () => {
  await provider?.close();
  await server?.close();
  if (journalDir) rmSync(journalDir, { recursive: true, force: true });
});

const runId = () => `run-${randomUUID()}`;
const CHILD = join(dirname(fileURLToPath(import.meta.url)), "gated-child.js");
const EFFECT = { account: "acct_crash", amount_cents: 7700 };

/** An HTTP proxy in front of countersign that, while holding, never answers a POST …/outcome. */
class HoldingProxy {
  url = "";
  held = 0;
  private readonly server: HTTPServer;
  private waiters: (() => void)[] = [];

  constructor(upstream: string) {
    const { hostname, port } = new URL(upstream);
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      if (req.method === "POST" && /\/outcome$/.test(req.url ?? "")) {
        this.held++;
        req.resume(); // read, and never answered
        for (const wake of this.waiters.splice(0)) wake();
        return;
      }
      const up = forward({ host: hostname, port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      up.on("error", () => res.destroy());
      req.pipe(up);
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Resolves once an outcome report is held, or rejects after timeout ms. */
  async holding(timeout = 20_000): Promise<void> {
    const deadline = performance.now() + timeout;
    while (this.held === 0) {
      const left = deadline - performance.now();
      if (left <= 0) throw new Error("no outcome report reached the proxy in time");
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Runs the child; resolves with its exit and output. */
function child(url: string, run: string, dir: string, onStart?: (kill: () => void) => void) {
  const p = spawn(process.execPath, [CHILD, url, TOKEN, dir, provider.url, run], { stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  p.stdout.on("data", (c: Buffer) => (stdout += c.toString("utf8")));
  p.stderr.on("data", (c: Buffer) => (stderr += c.toString("utf8")));
  onStart?.(() => p.kill("SIGKILL"));
  return new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
    p.once("close", (code, signal) => resolve({ code, signal, stdout, stderr })));
}

const PAYOUT = { account: "acct_1029", amount_cents: 2500 };

/** The request under key, once the gated call in flight has made it. */
async function requested(key: string, timeout = 20_000): Promise<Request> {
  const deadline = performance.now() + timeout;
  for (;;) {
    try {
      return await client.get(key);
    } catch (e) {
      if (!(e instanceof NotFoundError) || performance.now() > deadline) throw e;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("gated functions", () => {
  test("a reviewer's edit runs the function with the edited effect, key and receipt, and the original never", async () => {
    const run = runId();
    const key = intentKey(run, 1, "sdk.payout", PAYOUT);
    const edited = { ...PAYOUT, amount_cents: 1900 };
    const editKey = intentKey(run, 1, "sdk.payout", edited);
    const got: { effect: typeof PAYOUT; key: string; receipt: string }[] = [];
    const payout = client.gated("sdk.payout", async (effect: typeof PAYOUT, { key, receipt }) => {
      got.push({ effect, key, receipt });
      return pay(provider.url, effect, key, receipt);
    }, { journalDir });

    const call = payout({ runId: run, step: 1, effect: PAYOUT });
    await server.edit(await requested(key), edited);
    const done = await call;

    assert.equal(got.length, 1);
    assert.deepEqual([got[0]!.effect, got[0]!.key], [edited, editKey]);
    const [write, ...more] = provider.sent(editKey);
    assert.equal(more.length, 0);
    assert.equal(write!.refusal, "", "the provider refused the edit's receipt");
    assert.equal(write!.claims?.key, editKey);
    assert.equal(provider.sent(key).length, 0, "the original was written");
    // The outcome is the edit's; the original stays edited, unwritten.
    assert.deepEqual([done.replayed, done.request.key, done.request.supersedes, done.request.editedFrom, done.request.execution?.state],
      [false, editKey, key, [key], "succeeded"]);
    const original = await client.get(key);
    assert.deepEqual([original.status, original.supersededBy, original.receipt], ["edited", editKey, null]);
    assert.deepEqual(readdirSync(journalDir), [], "the journal still holds the reported outcome");
    // Called again with the agent's effect: the edit's recorded outcome.
    const again = await payout({ runId: run, step: 1, effect: PAYOUT });
    assert.deepEqual([again.replayed, again.request.key, again.providerRef, got.length], [true, editKey, done.providerRef, 1]);
    assert.equal(provider.sent(editKey).length, 1);
  });

  test("run once after approval, with a receipt the provider's verifier takes and refuses for one changed byte; a call again replays", async () => {
    const run = runId();
    const key = intentKey(run, 1, "sdk.payout", PAYOUT);
    let calls = 0;
    const payout = client.gated("sdk.payout", async (effect: typeof PAYOUT, { key, receipt, request }) => {
      calls++;
      assert.equal(request.status, "approved");
      return pay(provider.url, effect, key, receipt);
    }, { journalDir });

    const call = payout({ runId: run, step: 1, effect: PAYOUT, summary: "Pay out 25.00" });
    const pending = await requested(key);
    assert.deepEqual([pending.status, pending.receipt], ["pending", null]);
    assert.equal(calls, 0, "the function ran before the approval");
    assert.match(await approve(key, server.reviewer), /approved/);
    const done = await call;

    assert.equal(calls, 1);
    assert.deepEqual([done.replayed, done.value?.providerRef, done.providerRef], [false, "pay_" + provider.writes.length, done.value?.providerRef]);
    assert.deepEqual([done.request.execution?.state, done.request.settled, done.request.succeeded], ["succeeded", true, true]);
    assert.deepEqual(readdirSync(journalDir), [], "the journal still holds the reported outcome");

    // The provider took the write under the key, with a receipt for it.
    const [write, ...more] = provider.sent(key);
    assert.equal(more.length, 0);
    assert.equal(write!.refusal, "", "the provider refused the receipt");
    assert.deepEqual([write!.claims?.key, write!.claims?.tool, write!.claims?.agent, write!.claims?.decided_by, write!.claims?.via],
      [key, "sdk.payout", "sdk-agent", "local:reviewer", "human"]);
    assert.equal(write!.receipt, done.request.receipt);
    const changed = write!.body.replace("2500", "2501");
    assert.notEqual(changed, write!.body);
    await assert.rejects(verifier.verify(write!.receipt, { key, tool: "sdk.payout", body: changed }), ReceiptEffectError);

    // Called again: countersign holds the outcome, so the function does not run.
    const again = await payout({ runId: run, step: 1, effect: PAYOUT });
    assert.deepEqual([again.replayed, again.value, again.providerRef, calls], [true, undefined, done.providerRef, 1]);
    assert.equal(provider.sent(key).length, 1);
  });

  test("a rejection throws RejectedError with the reviewer's reason and what a retry does; the function never runs", async () => {
    const run = runId();
    const key = intentKey(run, 2, "sdk.payout", PAYOUT);
    let calls = 0;
    const payout = client.gated("sdk.payout", () => {
      calls++;
    }, { journalDir });
    const call = assert.rejects(payout({ runId: run, step: 2, effect: PAYOUT }), (e: unknown) => {
      assert.ok(e instanceof RejectedError, String(e));
      assert.deepEqual([e.status, e.reason, e.by], ["rejected", "That account is closed.", "local:reviewer"]);
      assert.match(e.retry, /new step/);
      assert.match(e.message, /That account is closed\. Posting/);
      return true;
    });
    await requested(key);
    await reject(key, { ...server.reviewer, reason: "That account is closed." });
    await call;
    // The same intent gets the same rejection, asking nobody.
    await assert.rejects(payout({ runId: run, step: 2, effect: PAYOUT }), RejectedError);
    assert.equal(calls, 0);
    // Deciding twice is refused, with its code.
    await assert.rejects(approve(key, server.reviewer), (e: unknown) => e instanceof LocalReviewError && e.code === "already_decided");
  });

  test("a function that throws is reported failed with its message and the error thrown again; a call again does not run it", async () => {
    const run = runId();
    const key = intentKey(run, 3, "sdk.payout", PAYOUT);
    let calls = 0;
    const boom = new Error("the bank is closed on Sundays");
    const payout = client.gated("sdk.payout", () => {
      calls++;
      throw boom;
    }, { journalDir });
    const call = assert.rejects(payout({ runId: run, step: 3, effect: PAYOUT }), (e: unknown) => e === boom);
    await requested(key);
    await approve(key, server.reviewer);
    await call;
    const req = await client.get(key);
    assert.deepEqual([req.execution?.state, req.execution?.code, req.settled], ["failed", "agent_failed", true]);
    await assert.rejects(payout({ runId: run, step: 3, effect: PAYOUT }), WriteFailedError);
    assert.equal(calls, 1);
    assert.deepEqual(readdirSync(journalDir), []);
  });

  test("an outcome countersign holds wins over a journal entry left behind, which is removed", async () => {
    const run = runId();
    const key = intentKey(run, 4, "sdk.payout", PAYOUT);
    let calls = 0;
    const payout = client.gated("sdk.payout", async (effect: typeof PAYOUT, a) => {
      calls++;
      return pay(provider.url, effect, a.key, a.receipt);
    }, { journalDir });
    const call = payout({ runId: run, step: 4, effect: PAYOUT });
    await approve((await requested(key)).id, server.reviewer);
    const done = await call;
    // A process that stopped after the report, before removing its entry.
    const journal = new Journal(journalDir);
    await journal.write({ key, request: done.request.id, status: "succeeded", providerRef: "pay_other", detail: "" });
    const again = await payout({ runId: run, step: 4, effect: PAYOUT });
    assert.deepEqual([again.replayed, again.providerRef, calls], [true, done.providerRef, 1]);
    assert.equal(await journal.read(key), undefined);
  });

  test("two calls of one key at once in one process call the function once", async () => {
    const run = runId();
    const key = intentKey(run, 6, "sdk.payout", PAYOUT);
    let calls = 0;
    const payout = client.gated("sdk.payout", async (effect: typeof PAYOUT, a) => {
      calls++;
      return pay(provider.url, effect, a.key, a.receipt);
    }, { journalDir });
    const both = Promise.all([payout({ runId: run, step: 6, effect: PAYOUT }), payout({ runId: run, step: 6, effect: PAYOUT })]);
    await approve((await requested(key)).id, server.reviewer);
    const [one, two] = await both;
    assert.deepEqual([one.replayed, two.replayed, calls, provider.sent(key).length], [false, true, 1, 1]);
  });

  test("a tool countersign sends itself is not a gated function's to run", async () => {
    let calls = 0;
    const credit = client.gated("sdk.credit", () => {
      calls++;
    }, { journalDir });
    // Allowed by policy (amount_cents ≤ 100): approved on arrival, with no receipt.
    await assert.rejects(credit({ runId: runId(), step: 1, effect: { invoice: "inv_1", amount_cents: 50, currency: "USD" } }),
      (e: unknown) => e instanceof CountersignError && /not an agent-executed tool/.test(e.message));
    assert.equal(calls, 0);
  });

  test("reportOutcome is idempotent and refuses a differing report", async () => {
    const run = runId();
    const req = await client.request({ tool: "sdk.payout", runId: run, step: 5, effect: PAYOUT });
    await approve(req.id, server.reviewer);
    const decided = await client.waitForDecision(req.id, { timeout: 10_000 });
    assert.ok(decided.receipt, "an approved agent-executed request carries its receipt");
    const first = await client.reportOutcome(req.id, { status: "succeeded", providerRef: "pay_x", detail: "done" });
    const second = await client.reportOutcome(req.id, { status: "succeeded", providerRef: "pay_x" });
    assert.deepEqual([first.execution?.state, second.execution?.providerRef, second.version], ["succeeded", "pay_x", first.version]);
    await assert.rejects(client.reportOutcome(req.id, { status: "failed", detail: "no" }), (e: unknown) =>
      e instanceof CountersignError && "code" in e && e.code === "outcome_conflict");
  });

  test("a process killed after the function returned, before the outcome was recorded, reports it when run again and never calls the function twice", async (t) => {
    const proxy = new HoldingProxy(server.url);
    await proxy.listen();
    t.after(() => proxy.close());
    const dir = join(journalDir, "crash");
    const run = runId();
    const key = intentKey(run, 1, "sdk.payout", EFFECT);

    let kill: () => void = () => undefined;
    const first = child(proxy.url, run, dir, (k) => (kill = k));
    const pending = await requested(key);
    assert.equal(pending.status, "pending");
    await approve(pending.id, server.reviewer);
    // The provider took the write, the function returned, and its report is
    // held on the way (so the journal holds the outcome): kill.
    await provider.until(key);
    await proxy.holding();
    kill();
    const killed = await first;
    assert.equal(killed.signal, "SIGKILL", `the child was not killed: ${JSON.stringify(killed)}`);
    assert.equal(killed.stdout, "", "the first run finished");
    assert.equal(provider.sent(key).length, 1);
    const unreported = await client.get(key);
    assert.deepEqual([unreported.status, unreported.execution?.state], ["approved", "ready"], "the held report reached countersign");
    assert.equal(readdirSync(dir).length, 1, "the outcome was not journaled before the report");

    // Run again, with nothing held.
    const second = await child(server.url, run, dir);
    assert.equal(second.code, 0, second.stderr);
    const said = JSON.parse(second.stdout) as { replayed: boolean; providerRef: string; state: string };
    const [write, ...more] = provider.sent(key);
    assert.equal(more.length, 0, "the function was called again");
    assert.equal(write!.refusal, "");
    assert.deepEqual(said, { replayed: true, providerRef: write!.id, state: "succeeded" });
    const recorded = await client.get(key);
    assert.deepEqual([recorded.execution?.state, recorded.execution?.providerRef, recorded.settled], ["succeeded", write!.id, true]);
    assert.deepEqual(readdirSync(dir), [], "the reported outcome stayed in the journal");

    // And once more: countersign holds the outcome, nothing is journaled, the function does not run.
    const third = await child(server.url, run, dir);
    assert.equal(third.code, 0, third.stderr);
    assert.equal((JSON.parse(third.stdout) as { replayed: boolean }).replayed, true);
    assert.equal(provider.sent(key).length, 1);
  });
});
