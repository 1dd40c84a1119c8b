import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { createServer } from "node:net";

import {
  APIError, Client, ConnectionError, MAX_EDIT_HOPS, ConnectionTimeoutError, CountersignError, InternalError, InvalidKeyError, KeyReusedError,
  NumberError, UnavailableError, UnknownToolError, VERSION, WaitTimeoutError,
} from "@countersign/client";
import * as calls from "../src/calls.js";
import { Fake, hangUp, holdForWait, refusal, reply, representation, stall, type Answer } from "./fake.js";

const fakes: Fake[] = [];
after(() => Promise.all(fakes.map((f) => f.close())));

async function fake(...answers: Answer[]): Promise<Fake> {
  const f = await Fake.start(...answers);
  fakes.push(f);
  return f;
}

const EFFECT = { invoice: "inv_8841", amount_cents: 4200, currency: "USD" };

describe("retries", () => {
  test("a request is resent with the same bytes after a 503 and a dropped connection", async () => {
    const f = await fake(refusal(503, "unavailable", {}, { "Retry-After": "1" }), hangUp, reply(201, representation()));
    const client = new Client({ url: f.url, token: "agent-token" });
    const started = performance.now();
    const req = await client.request({ tool: "billing.credit", runId: "r-7f3a", step: 6, effect: EFFECT, summary: "Credit" });
    assert.ok(performance.now() - started >= 1000, "Retry-After: 1 was not waited");
    assert.equal(req.key, "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c");
    assert.equal(req.replayed, false);
    assert.equal(req.createdAt.toISOString(), "2026-01-02T03:04:05.123Z");
    assert.equal(f.calls.length, 3);
    assert.deepEqual(new Set(f.calls.map((c) => c.body)), new Set([f.calls[0]!.body]));
    const first = f.calls[0]!;
    assert.equal(first.body, '{"run_id":"r-7f3a","step":6,"tool":"billing.credit","effect":{"invoice":"inv_8841","amount_cents":4200,"currency":"USD"},"summary":"Credit"}');
    assert.equal(first.method, "POST");
    assert.equal(first.path, "/v1/requests");
    assert.equal(first.headers.authorization, "Bearer agent-token");
    assert.equal(first.headers["content-type"], "application/json");
    assert.equal(first.headers["user-agent"], `countersign-typescript/${VERSION}`);
  });

  test("an answer that does not come in time is asked again", async () => {
    const f = await fake(stall, reply(200, representation()));
    const started = performance.now();
    const req = await new Client({ url: f.url, token: "t", timeout: 300 }).get("wa_x");
    assert.ok(performance.now() - started < 3000);
    assert.equal(req.version, 1);
    assert.equal(f.calls.length, 2);
  });

  test("a replay says so", async () => {
    const f = await fake(reply(200, representation(), { "Idempotent-Replayed": "true" }));
    const req = await new Client({ url: f.url, token: "t" }).request({ tool: "t", runId: "r", step: 1, effect: {} });
    assert.equal(req.replayed, true);
  });

  test("a refusal is thrown at once with everything it says", async () => {
    const f = await fake(refusal(409, "key_reused", { field: "Idempotency-Key" }));
    const client = new Client({ url: f.url, token: "t" });
    await assert.rejects(client.request({ tool: "t", runId: "r", step: 1, effect: {}, idempotencyKey: "own-key-123" }), (e: unknown) => {
      assert.ok(e instanceof KeyReusedError);
      assert.equal(e.status, 409);
      assert.equal(e.field, "Idempotency-Key");
      assert.equal(e.requestId, "req_" + "a".repeat(24));
      assert.equal(e.detail, "refused: key_reused");
      return true;
    });
    assert.equal(f.calls.length, 1);
    assert.equal(JSON.parse(f.calls[0]!.body).idempotency_key, "own-key-123");
  });

  test("retries end when retryFor runs out", async () => {
    const f = await fake(refusal(503, "unavailable"));
    const started = performance.now();
    await assert.rejects(new Client({ url: f.url, token: "t", retryFor: 500 }).tools(), UnavailableError);
    assert.ok(performance.now() - started < 2000);
    assert.ok(f.calls.length > 1);
  });

  test("a network error, once retries are spent, is a ConnectionError", async () => {
    const f = await fake(stall);
    await assert.rejects(new Client({ url: f.url, token: "t", timeout: 100, retryFor: 1500 }).tools(), ConnectionTimeoutError);
    assert.ok(f.calls.length > 1, `${f.calls.length} calls: the call was not asked again`);
  });

  test("a read is asked again after a 500, a request is not", async () => {
    const f = await fake(refusal(500, "internal"), reply(200, representation(3)), refusal(500, "internal"), reply(201, representation()));
    const client = new Client({ url: f.url, token: "t" });
    assert.equal((await client.get("wa_x")).version, 3);
    await assert.rejects(client.request({ tool: "billing.credit", runId: "r-7f3a", step: 6, effect: EFFECT }), InternalError);
    assert.deepEqual(f.calls.map((c) => `${c.method} ${c.path}`), ["GET /v1/requests/wa_x", "GET /v1/requests/wa_x", "POST /v1/requests"]);
  });

  test("cancel and redrive are sent once", async () => {
    const f = await fake(refusal(503, "unavailable"));
    const client = new Client({ url: f.url, token: "t" });
    await assert.rejects(client.cancel("wa_x"), UnavailableError);
    await assert.rejects(client.redrive("wa_x"), UnavailableError);
    assert.deepEqual(f.calls.map((c) => `${c.method} ${c.path}`), ["POST /v1/requests/wa_x/cancel", "POST /v1/requests/wa_x/redrive"]);
  });

  test("a page that is not countersign's is an APIError, and a redirect is not followed", async () => {
    const f = await fake(reply(502), reply(302, undefined, { Location: "http://elsewhere.invalid/" }));
    const client = new Client({ url: f.url, token: "t" });
    for (const status of [502, 302]) {
      await assert.rejects(client.get("wa_x"), (e: unknown) => e instanceof APIError && e.constructor === APIError && e.status === status && e.code === "");
    }
    assert.equal(f.calls.length, 2);
  });

  test("an effect JSON cannot hold rejects the call's promise, and nothing is sent", async () => {
    const f = await fake(reply(201, representation()));
    const client = new Client({ url: f.url, token: "t" });
    const call = client.request({ tool: "t", runId: "r", step: 1, effect: { n: NaN } });
    await assert.rejects(call, (e: unknown) => e instanceof NumberError && e.pointer === "/effect/n");
    await assert.rejects(client.request({ tool: "t", runId: "r", step: 1, effect: { d: new Date(0) } }), TypeError);
    assert.equal(f.calls.length, 0);
  });

  test("a fetch given is used, called as a plain function", async () => {
    const f = await fake(reply(200, { tools: [] }));
    const seen: unknown[] = [];
    const client = new Client({
      url: f.url,
      token: "t",
      fetch: function (this: unknown, input: Parameters<typeof fetch>[0], init?: RequestInit) {
        seen.push(this);
        return fetch(input, init);
      },
    });
    assert.deepEqual(await client.tools(), []);
    assert.deepEqual(seen, [undefined]);
  });

  test("a base URL must be http or https", () => {
    for (const url of ["127.0.0.1:8080", "ftp://host", ""]) assert.throws(() => new Client({ url, token: "t" }), TypeError, url);
  });

  test("an aborted signal ends the call and its retries", async () => {
    const f = await fake(refusal(503, "unavailable", {}, { "Retry-After": "30" }));
    const client = new Client({ url: f.url, token: "t" });
    const controller = new AbortController();
    const call = client.request({ tool: "t", runId: "r", step: 1, effect: {} }, { signal: controller.signal });
    setTimeout(() => controller.abort(), 200);
    const started = performance.now();
    await assert.rejects(call, (e: unknown) => e instanceof DOMException && e.name === "AbortError");
    assert.ok(performance.now() - started < 2000);
    assert.equal(f.calls.length, 1);
    await assert.rejects(client.tools({ signal: AbortSignal.abort() }), (e: unknown) => e instanceof DOMException && e.name === "AbortError");
    assert.equal(f.calls.length, 1, "an aborted signal sends nothing");
  });
});

describe("wait and list", () => {
  test("wait follows edits a bounded number of times, then returns the last edited request as it is", async () => {
    const chain = Array.from({ length: MAX_EDIT_HOPS + 2 }, (_, i) => "wa_" + i.toString(16).padStart(64, "0"));
    const f = await fake(...chain.slice(0, MAX_EDIT_HOPS + 1).map((key, i) =>
      reply(200, representation(1, "edited", true, { key, superseded_by: chain[i + 1] }))));
    const req = await new Client({ url: f.url, token: "t" }).wait(chain[0]!, { timeout: 10_000 });
    assert.deepEqual([req.status, req.key, req.supersededBy], ["edited", chain[MAX_EDIT_HOPS], chain[MAX_EDIT_HOPS + 1]]);
    assert.deepEqual(req.editedFrom, chain.slice(0, MAX_EDIT_HOPS));
    assert.deepEqual(f.calls.map((c) => c.path), chain.slice(0, MAX_EDIT_HOPS + 1).map((k) => "/v1/requests/" + k));
  });

  test("wait long-polls from the version it last saw", async () => {
    const f = await fake(reply(200, representation(1)), reply(200, representation(2)), reply(200, representation(3, "cancelled", true)));
    const req = await new Client({ url: f.url, token: "t" }).wait("wa_x", { timeout: 10_000 });
    assert.equal(req.settled, true);
    assert.equal(req.status, "cancelled");
    const queries = f.calls.map((c) => new URL(c.path, "http://x").searchParams);
    assert.deepEqual(queries.map((q) => q.get("since")), [null, "1", "2"]);
    // Each poll holds what is left of the 10 s, to the millisecond below.
    for (const q of queries.slice(1)) {
      const wait = q.get("wait") ?? "";
      assert.match(wait, /^[0-9]+ms$/);
      assert.ok(9000 < parseInt(wait, 10) && parseInt(wait, 10) < 10_000, wait);
    }
  });

  test("a poll holds at most the time left", () => {
    for (const [remaining, wait] of [
      [500, "500ms"], [499.9, "499ms"], [1000, "1s"], [2000.9, "2s"], [29_999.9, "29999ms"], [30_000, "30s"], [45_000, "30s"], [Infinity, "30s"],
    ] as const) {
      const call = calls.poll("wa_x", 3, remaining);
      assert.ok(call.path.endsWith(`?wait=${wait}&since=3`), `${remaining}: ${call.path}`);
      assert.ok(call.hold <= Math.min(remaining, 30_000));
    }
  });

  test("a short wait returns near its timeout", async () => {
    // The fake holds each long-poll as long as its wait asks, as the server does.
    const f = await fake(reply(200, representation(1)), holdForWait(representation(1)));
    const started = performance.now();
    await assert.rejects(new Client({ url: f.url, token: "t" }).wait("wa_x", { timeout: 500 }), WaitTimeoutError);
    assert.ok(performance.now() - started < 900, `${performance.now() - started} ms`);
  });

  test("a long wait holds 30 seconds a poll", async () => {
    const f = await fake(reply(200, representation(4)), reply(200, representation(5, "rejected", true)));
    await new Client({ url: f.url, token: "t" }).wait("wa_x");
    assert.equal(f.calls[1]!.path, "/v1/requests/wa_x?wait=30s&since=4");
  });

  test("wait ends at its timeout", async () => {
    const f = await fake(reply(200, representation(1)), stall);
    const started = performance.now();
    await assert.rejects(new Client({ url: f.url, token: "t", timeout: 200 }).wait("wa_x", { timeout: 1000 }), (e: unknown) => {
      assert.ok(e instanceof WaitTimeoutError);
      assert.equal(e.request?.version, 1);
      return true;
    });
    assert.ok(performance.now() - started < 4000);
  });

  test("an aborted wait stops at once", async () => {
    const f = await fake(reply(200, representation(1)), stall);
    const controller = new AbortController();
    const waiting = new Client({ url: f.url, token: "t" }).wait("wa_x", { signal: controller.signal });
    setTimeout(() => controller.abort(new Error("the run ended")), 200);
    await assert.rejects(waiting, /the run ended/);
  });

  test("requestAndWait resends the same bytes, then long-polls", async () => {
    const f = await fake(
      refusal(503, "unavailable"), reply(201, representation(1)), reply(200, representation(2)),
      reply(200, representation(3, "approved", true, { execution: { state: "succeeded", attempts: 1, provider_ref: "obj_1" } })),
    );
    const req = await new Client({ url: f.url, token: "t" }).requestAndWait({ tool: "t", runId: "r", step: 1, effect: { a: 1.5 } }, { timeout: 10_000 });
    assert.equal(req.succeeded, true);
    assert.equal(req.execution?.providerRef, "obj_1");
    assert.equal(f.calls[0]!.body, f.calls[1]!.body);
    assert.equal(f.calls.length, 4);
  });

  test("list reads page after page", async () => {
    const f = await fake(
      reply(200, { data: [representation(1, "pending", false, { id: "a" }), representation(1, "pending", false, { id: "b" })], next_cursor: "c1" }),
      reply(200, { data: [representation(1, "pending", false, { id: "c" })], next_cursor: null }),
    );
    const ids: string[] = [];
    for await (const r of new Client({ url: f.url, token: "t" }).list({ status: "pending", settled: false, limit: 2 })) ids.push(r.id);
    assert.deepEqual(ids, ["a", "b", "c"]);
    assert.deepEqual(f.calls.map((c) => c.path), [
      "/v1/requests?status=pending&settled=false&limit=2", "/v1/requests?status=pending&cursor=c1&settled=false&limit=2",
    ]);
  });
});

describe("client keys and refusals", () => {
  test("a client key countersign would refuse rejects the call, and nothing is sent", async () => {
    const f = await fake(reply(201, representation()));
    const client = new Client({ url: f.url, token: "t" });
    const derived = "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c";
    for (const key of [" " + derived, derived + " ", "WA_" + derived.slice(3), "wa_" + "0".repeat(64), "short", "tab\there-123"]) {
      await assert.rejects(
        client.request({ tool: "billing.credit", runId: "r-7f3a", step: 6, effect: EFFECT, idempotencyKey: key }), InvalidKeyError, key,
      );
    }
    assert.equal(f.calls.length, 0);
    await client.request({ tool: "billing.credit", runId: "r-7f3a", step: 6, effect: EFFECT, idempotencyKey: derived });
    await client.request({ tool: "billing.credit", runId: "r-7f3a", step: 6, effect: EFFECT, idempotencyKey: "dispatch:inv_8841/1" });
    assert.deepEqual(f.calls.map((c) => JSON.parse(c.body).idempotency_key), [derived, "dispatch:inv_8841/1"]);
  });

  test("unknown_tool carries the tools the agent may use", async () => {
    const f = await fake(refusal(422, "unknown_tool", { tools: ["billing.credit", "crm.note"] }));
    await assert.rejects(new Client({ url: f.url, token: "t" }).request({ tool: "db.drop", runId: "r", step: 1, effect: {} }), (e: unknown) => {
      assert.ok(e instanceof UnknownToolError);
      assert.deepEqual(e.tools, ["billing.credit", "crm.note"]);
      return true;
    });
  });

  test("a server that is down is a ConnectionError", async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createServer();
      probe.listen(0, "127.0.0.1", () => {
        const { port } = probe.address() as { port: number };
        probe.close(() => resolve(port));
      });
    });
    await assert.rejects(new Client({ url: `http://127.0.0.1:${port}`, token: "t", retryFor: 0 }).get("wa_x"), (e: unknown) => {
      assert.ok(e instanceof ConnectionError && e instanceof CountersignError && !(e instanceof ConnectionTimeoutError));
      return true;
    });
  });
});
