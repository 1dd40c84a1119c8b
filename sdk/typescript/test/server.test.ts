// The SDK against a real countersign (test/local-server.ts): nothing here
// is scripted; the server answers as it answers agents.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, test } from "node:test";

import {
  AlreadyDecidedError, CallbackNotConfiguredError, Client, DeniedByPolicyError, InvalidEffectError, InvalidKeyError, InvalidRequestError, JsonNumber,
  KeyReusedError, NotFoundError, NumberError, SignatureError, UnauthorizedError, UnknownToolError, WaitTimeoutError, intentKey,
  requestFromJSON, verifySignature,
} from "@countersign/client";
import { canonical, dumps } from "../src/canonical.js";
import * as calls from "../src/calls.js";
import { REQUEST_MEMBERS } from "../src/request.js";
import { Transport } from "../src/transport.js";
import { LocalReviewError } from "@countersign/client/testing";
import { CALLBACK_SECRET, CALLBACK_TOKEN, DISPATCH_SECRET, Server, TOKEN } from "./local-server.js";
import { load } from "./shared.js";

let server: Server;
let client: Client;
before(async () => {
  server = await Server.start();
  client = new Client({ url: server.url, token: TOKEN, timeout: 10_000 });
});
after(() => server?.close());

const runId = () => `run-${randomUUID()}`;
const CREDIT = { invoice: "inv_8841", amount_cents: 4200, currency: "USD" };

describe("against countersign serve", () => {
  test("request, approve from the command line, wait: succeeded, written once under the offline key", async () => {
    const run = runId();
    const req = await client.request({ tool: "sdk.credit", runId: run, step: 6, effect: CREDIT, summary: "Credit 42.00 USD" });
    assert.deepEqual([req.status, req.settled, req.replayed], ["pending", false, false]);
    assert.equal(req.key, intentKey(run, 6, "sdk.credit", CREDIT));
    assert.deepEqual(req.policy?.approvers, ["local:reviewer"]);
    await server.approve(req);
    const done = await client.wait(req.key, { timeout: 30_000 });
    assert.equal(done.settled, true);
    assert.equal(done.succeeded, true);
    assert.deepEqual([done.status, done.decision?.verdict, done.decision?.via], ["approved", "approve", "cli"]);
    assert.ok(done.version > req.version);
    assert.ok(done.execution?.providerRef?.startsWith("obj_"), JSON.stringify(done.execution));
    // The provider got the write once, under the offline key, signed.
    const dispatches = server.provider.received.filter((d) => d.headers["idempotency-key"] === req.key);
    assert.equal(dispatches.length, 1);
    const d = dispatches[0]!;
    assert.ok(d.verified, "the dispatch's v2 signature did not verify");
    assert.equal(new TextDecoder().decode(d.body), canonical(CREDIT));
    await assert.rejects(
      verifySignature(DISPATCH_SECRET, String(d.headers["countersign-signature"]), d.body, { method: "POST", path: "/other", idempotencyKey: req.key }),
      SignatureError,
      "v2 covers the path",
    );
  });

  test("a write the policy denies is refused on every post and never sent", async () => {
    const run = runId();
    const frozen = { ...CREDIT, invoice: "inv_frozen" };
    const key = intentKey(run, 1, "sdk.credit", frozen);
    for (let post = 1; post <= 2; post++) {
      await assert.rejects(client.requestAndWait({ tool: "sdk.credit", runId: run, step: 1, effect: frozen }, { timeout: 30_000 }), (e: unknown) => {
        assert.ok(e instanceof DeniedByPolicyError, String(e));
        assert.deepEqual([e.status, e.tier, e.key], [403, "frozen-invoice", key]);
        assert.ok(e.detail.includes("Credits to a frozen invoice are never sent."), e.detail);
        return true;
      });
    }
    const req = await client.get(key);
    assert.deepEqual([req.status, req.settled, req.decision?.by, req.decision?.via, req.decision?.reason],
      ["rejected", true, "policy:frozen-invoice", "policy", "Credits to a frozen invoice are never sent."]);
    assert.deepEqual([req.policy?.verdict, req.policy?.tierName, req.policy?.approvals], ["deny", "frozen-invoice", 0]);
    assert.equal(server.provider.received.filter((d) => d.headers["idempotency-key"] === key).length, 0);
  });

  test("a write the policy allows is written without a review", async () => {
    const small = { ...CREDIT, amount_cents: 42 };
    const done = await client.requestAndWait({ tool: "sdk.credit", runId: runId(), step: 1, effect: small }, { timeout: 30_000 });
    assert.equal(done.succeeded, true, JSON.stringify(done));
    assert.deepEqual([done.status, done.decision?.by, done.decision?.via], ["approved", "policy:small", "policy"]);
    assert.deepEqual([done.policy?.verdict, done.policy?.tierName, done.policy?.approvals], ["allow", "small", 0]);
    assert.ok(done.policy?.version.startsWith("sha256:"), done.policy?.version);
    assert.equal(server.provider.received.filter((d) => d.headers["idempotency-key"] === done.key).length, 1);
  });

  test("the same intent replays", async () => {
    const run = runId();
    const first = await client.request({ tool: "sdk.credit", runId: run, step: 1, effect: CREDIT, summary: "one wording" });
    const again = await client.request({
      tool: "sdk.credit", runId: run, step: 1, effect: { currency: "USD", amount_cents: 4200, invoice: "inv_8841" }, summary: "another wording",
    });
    assert.equal(first.replayed, false);
    assert.equal(again.replayed, true);
    assert.deepEqual([again.id, again.key, again.summary], [first.id, first.key, "one wording"]);
  });

  test("a client key for another write is key_reused (409)", async () => {
    const own = `sdk-own-key-${randomUUID()}`;
    const run = runId();
    await client.request({ tool: "sdk.credit", runId: run, step: 1, effect: CREDIT, idempotencyKey: own });
    await assert.rejects(
      client.request({ tool: "sdk.credit", runId: run, step: 1, effect: { ...CREDIT, amount_cents: 4300 }, idempotencyKey: own }),
      (e: unknown) => {
        assert.ok(e instanceof KeyReusedError);
        assert.deepEqual([e.status, e.code], [409, "key_reused"]);
        assert.match(e.requestId ?? "", /^req_[0-9a-f]{24}$/);
        return true;
      },
    );
  });

  test("an invalid effect names every violation (422)", async () => {
    await assert.rejects(
      client.request({ tool: "sdk.credit", runId: runId(), step: 1, effect: { invoice: "INV 1", amount_cents: 0, currency: "GBP" } }),
      (e: unknown) => {
        assert.ok(e instanceof InvalidEffectError);
        assert.equal(e.status, 422);
        assert.deepEqual(new Set(e.errors.map((v) => v.field)), new Set(["/effect/invoice", "/effect/amount_cents", "/effect/currency"]));
        assert.deepEqual([e.field, e.detail], [e.errors[0]!.field, e.errors[0]!.message]);
        return true;
      },
    );
  });

  test("an inexact number is refused where intentKey refuses it", async () => {
    const effect = { lines: [{ amount: 1 }, { amount: new JsonNumber("9007199254740993.0") }] };
    let offline: NumberError | undefined;
    try {
      intentKey("r", 1, "sdk.note", effect);
    } catch (e) {
      if (e instanceof NumberError) offline = e;
    }
    assert.ok(offline, "intentKey accepted an inexact number");
    await assert.rejects(client.request({ tool: "sdk.note", runId: runId(), step: 1, effect }), (e: unknown) => {
      assert.ok(e instanceof InvalidRequestError);
      assert.equal(e.field, "/effect/lines/1/amount");
      assert.equal(offline?.pointer, e.field);
      return true;
    });
    // An integer JavaScript writes in full past 2^53, as the server refuses it.
    await assert.rejects(client.request({ tool: "sdk.note", runId: runId(), step: 1, effect: { n: 1e20 } }), (e: unknown) => {
      assert.throws(() => intentKey("r", 1, "sdk.note", { n: 1e20 }), NumberError);
      return e instanceof InvalidRequestError && e.field === "/effect/n";
    });
  });

  test("the server refuses every client key the SDK refuses", async () => {
    const vectors = load("internal/intentkey/testdata/key-vectors.json").client_keys;
    const transport = new Transport({ url: server.url, token: TOKEN, userAgent: "test", timeout: 10_000, fetch: globalThis.fetch });
    const run = runId();
    let step = 0;
    for (const v of vectors.refused as { name: string; key: string }[]) {
      step++;
      await assert.rejects(client.request({ tool: "sdk.credit", runId: run, step, effect: CREDIT, idempotencyKey: v.key }), InvalidKeyError, v.name);
      // Around the SDK's own check, to the server's.
      const body = dumps({ run_id: run, step, tool: "sdk.credit", effect: CREDIT, idempotency_key: v.key });
      await assert.rejects(transport.exchange({ method: "POST", path: "/v1/requests", body, retry: false, hold: 0, read: (a) => a }), (e: unknown) => {
        assert.ok(e instanceof InvalidRequestError, v.name);
        assert.equal(e.field, "/idempotency_key", v.name);
        assert.ok(e.detail.includes("Idempotency-Key"), v.name);
        return true;
      });
    }
    const derived = intentKey(run, 0, "sdk.credit", CREDIT);
    assert.equal((await client.request({ tool: "sdk.credit", runId: run, step: 0, effect: CREDIT, idempotencyKey: derived })).key, derived);
  });

  test("an unknown tool names the tools the agent may use", async () => {
    await assert.rejects(client.request({ tool: "sdk.debit", runId: runId(), step: 1, effect: CREDIT }), (e: unknown) => {
      assert.ok(e instanceof UnknownToolError);
      assert.deepEqual(e.tools, ["sdk.credit", "sdk.note", "sdk.payout"]);
      assert.ok(e.detail.includes("sdk.credit, sdk.note, sdk.payout"));
      return true;
    });
  });

  test("a short wait ends near its timeout", async () => {
    const req = await client.request({ tool: "sdk.credit", runId: runId(), step: 1, effect: CREDIT });
    const started = performance.now();
    await assert.rejects(client.wait(req.key, { timeout: 500 }), WaitTimeoutError);
    assert.ok(performance.now() - started < 900, `${performance.now() - started} ms`);
  });

  test("the offline key is the server's", async () => {
    const effects: [Record<string, unknown>, number | string | bigint][] = [
      [{ one: 1.0, big: 1e21, tenth: 0.1, small: 2.5e-7, minus_zero: -0, exp: new JsonNumber("1E+2"),
        exact: new JsonNumber("9007199254740994.0"), max: 2 ** 53, bigint: 2n ** 53n, yes: true, none: null }, 1],
      [{ "\ue000": 1, "😀": 2, "é": "e\u0301", ctl: "\u0001\u2028\"\\", nested: [[{}], { a: [] }] }, "2"],
      [{}, -7],
      [{ n: 12 }, 2n ** 53n],
    ];
    for (const [effect, step] of effects) {
      const run = runId();
      const req = await client.request({ tool: "sdk.note", runId: run, step, effect });
      assert.equal(req.key, intentKey(run, step, "sdk.note", effect), JSON.stringify(effect, (_k, v) => (typeof v === "bigint" ? String(v) : v)));
      assert.equal(String(req.step), String(step));
    }
  });

  test("a bad token is unauthorized (401)", async () => {
    const stranger = new Client({ url: server.url, token: "not-a-token" });
    await assert.rejects(stranger.tools(), (e: unknown) => e instanceof UnauthorizedError && e.status === 401);
    await assert.rejects(stranger.request({ tool: "sdk.credit", runId: runId(), step: 1, effect: CREDIT }), UnauthorizedError);
  });

  test("cancel", async () => {
    const req = await client.request({ tool: "sdk.credit", runId: runId(), step: 1, effect: CREDIT });
    const cancelled = await client.cancel(req.id);
    assert.deepEqual([cancelled.status, cancelled.settled], ["cancelled", true]);
    assert.equal((await client.wait(req.key, { timeout: 5000 })).status, "cancelled");
    await assert.rejects(client.cancel(req.key), (e: unknown) => e instanceof AlreadyDecidedError && e.status === 409);
  });

  test("unknown refs, and a redrive without a callback", async () => {
    await assert.rejects(client.get("wa_" + "0".repeat(64)), NotFoundError);
    const req = await client.request({ tool: "sdk.credit", runId: runId(), step: 1, effect: CREDIT });
    await assert.rejects(client.redrive(req.key), CallbackNotConfiguredError);
  });

  test("tools", async () => {
    const tools = new Map((await client.tools()).map((t) => [t.name, t]));
    assert.deepEqual([...tools.keys()].sort(), ["sdk.credit", "sdk.note", "sdk.payout"]);
    const credit = tools.get("sdk.credit")!;
    assert.deepEqual([credit.description, credit.policy.approvals], ["Credit an invoice, in cents.", 1]);
    assert.deepEqual(credit.effectSchema?.required, ["invoice", "amount_cents", "currency"]);
    assert.equal(tools.get("sdk.note")!.effectSchema, null);
  });

  test("list reads every page, newest first, and a page at a time", async () => {
    const run = runId();
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await client.request({ tool: "sdk.credit", runId: run, step: i, effect: CREDIT }));
    await client.cancel(made[0]!.id);
    const listed: string[] = [];
    for await (const r of client.list({ runId: run, limit: 2 })) listed.push(r.id);
    assert.deepEqual(listed, made.map((r) => r.id).reverse(), "newest first, across three pages");
    const page = await client.listPage({ runId: run, limit: 2 });
    assert.equal(page.data.length, 2);
    assert.ok(page.nextCursor);
    const next = await client.listPage({ runId: run, limit: 2, cursor: page.nextCursor });
    assert.deepEqual(next.data.map((r) => r.id), [made[2]!.id, made[1]!.id]);
    const settled: string[] = [];
    for await (const r of client.list({ runId: run, settled: true })) settled.push(r.id);
    assert.deepEqual(settled, [made[0]!.id]);
    let pending = 0;
    for await (const r of client.list({ runId: run, status: "pending" })) pending += r.status === "pending" ? 1 : 0;
    assert.equal(pending, 4);
    await assert.rejects(client.listPage({ limit: 0 }), (e: unknown) => e instanceof InvalidRequestError && e.field === "limit");
  });

  test("every member the server sends is read", async () => {
    const req = await client.request({ tool: "sdk.credit", runId: runId(), step: 1, effect: CREDIT });
    await server.approve(req);
    await client.wait(req.id, { timeout: 30_000 });
    const transport = new Transport({ url: server.url, token: TOKEN, userAgent: "test", timeout: 10_000, fetch });
    const raw = JSON.parse((await transport.exchange(calls.get(req.id))).body) as Record<string, unknown>;
    const unread = Object.keys(raw).filter((k) => !REQUEST_MEMBERS.includes(k));
    assert.deepEqual(unread, [], "members the SDK does not read");
    assert.equal(requestFromJSON(raw).execution?.state, "succeeded");
  });

  test("a callback arrives signed, and verifySignature proves it", async () => {
    const agent = new Client({ url: server.url, token: CALLBACK_TOKEN, timeout: 10_000 });
    const req = await agent.request({ tool: "sdk.credit", runId: runId(), step: 1, effect: CREDIT });
    await agent.cancel(req.id);
    const delivery = await server.callbacks.until((r) => new TextDecoder().decode(r.body).includes(req.id));
    assert.ok(delivery.verified, "the callback's v2 signature did not verify");
    assert.equal(delivery.path, "/hooks/countersign");
    assert.equal(delivery.headers["countersign-event"], "request.settled");
    const body = requestFromJSON(JSON.parse(new TextDecoder().decode(delivery.body)));
    assert.deepEqual([body.id, body.key, body.status, body.settled, body.callback?.state], [req.id, req.key, "cancelled", true, "delivering"]);
    const header = String(delivery.headers["countersign-signature"]);
    const deliveryId = String(delivery.headers["countersign-delivery"]);
    await verifySignature(CALLBACK_SECRET, header, delivery.body, { method: "POST", path: "/hooks/countersign", deliveryId });
    await assert.rejects(verifySignature(CALLBACK_SECRET, header, delivery.body, { method: "POST", path: "/hooks/countersign", deliveryId: randomUUID() }), SignatureError);
    await assert.rejects(verifySignature(DISPATCH_SECRET, header, delivery.body, { method: "POST", path: "/hooks/countersign", deliveryId }), SignatureError);
    // A redrive sends it again: signed afresh, the same delivery.
    const seen = server.callbacks.received.length;
    await agent.redrive(req.key);
    const again = await server.callbacks.until((r) => server.callbacks.received.indexOf(r) >= seen && new TextDecoder().decode(r.body).includes(req.id));
    assert.ok(again.verified);
    assert.equal(again.headers["countersign-delivery"], deliveryId);
  });
});

describe("a reviewer's edit", () => {
  test("wait follows the edit to its outcome; the original never runs, and its callback names the edit", async () => {
    const agent = new Client({ url: server.url, token: CALLBACK_TOKEN, timeout: 10_000 });
    const run = runId();
    const req = await agent.request({ tool: "sdk.credit", runId: run, step: 1, effect: CREDIT });
    const edited = { ...CREDIT, amount_cents: 3000 };
    assert.match(await server.edit(req, edited), /changed amount_cents/);
    const done = await agent.wait(req.key, { timeout: 30_000 });
    // The edit's outcome, under the edit's own key, naming the original.
    assert.equal(done.succeeded, true, JSON.stringify(done));
    assert.equal(done.key, intentKey(run, 1, "sdk.credit", edited));
    assert.notEqual(done.key, req.key);
    assert.deepEqual([done.status, done.effect, done.supersedes, done.editedFrom], ["approved", edited, req.key, [req.key]]);
    const sent = (key: string) => server.provider.received.filter((d) => d.headers["idempotency-key"] === key);
    assert.deepEqual(sent(done.key).map((d) => new TextDecoder().decode(d.body)), [canonical(edited)]);
    assert.equal(sent(req.key).length, 0, "the original was written");
    const original = await agent.get(req.key);
    assert.deepEqual([original.status, original.settled, original.supersededBy, original.editedFrom], ["edited", true, done.key, []]);
    // waitForDecision and requestAndWait follow it too.
    assert.equal((await agent.waitForDecision(req.id, { timeout: 30_000 })).key, done.key);
    const again = await agent.requestAndWait({ tool: "sdk.credit", runId: run, step: 1, effect: CREDIT }, { timeout: 30_000 });
    assert.deepEqual([again.key, again.editedFrom], [done.key, [req.key]]);
    // The agent is told with request.edited, signed.
    const delivery = await server.callbacks.until((r) => r.headers["countersign-event"] === "request.edited" &&
      new TextDecoder().decode(r.body).includes(req.id));
    assert.ok(delivery.verified);
    assert.equal(requestFromJSON(JSON.parse(new TextDecoder().decode(delivery.body))).supersededBy, done.key);
  });

  test("a refused edit names its code and changes nothing", async () => {
    const req = await client.request({ tool: "sdk.credit", runId: runId(), step: 1, effect: CREDIT });
    await assert.rejects(server.edit(req, { ...CREDIT, amount_cents: 0 }), (e: unknown) => e instanceof LocalReviewError && e.code === "invalid_effect");
    assert.equal((await client.get(req.id)).status, "pending");
  });
});
