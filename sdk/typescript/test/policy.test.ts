// Policy verdicts as the SDK reads them: a write the tool's policy denies
// (403 denied_by_policy, the same on every post) and one it allows on
// arrival. The answers are scripted as the hook gives them
// (hook/policy_verdict_test.go checks the hook's side).

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { APIError, Client, DeniedByPolicyError, requestFromJSON, type PolicyVerdict } from "@countersign/client";
import { Fake, refusal, reply, representation, type Answer } from "./fake.js";
import { load } from "./shared.js";

const fakes: Fake[] = [];
after(() => Promise.all(fakes.map((f) => f.close())));

async function fake(...answers: Answer[]): Promise<Fake> {
  const f = await Fake.start(...answers);
  fakes.push(f);
  return f;
}

const KEY = "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c";
const DENIAL = 'Denied by policy (rule "frozen-invoice"): Credits to a frozen invoice are never sent.' +
  " Nothing will be sent; posting the same intent again gets the same answer.";
const INTENT = { tool: "billing.credit", runId: "r-7f3a", step: 6, effect: { invoice: "inv_8841", amount_cents: 4200, currency: "USD" } };

const denied = () => refusal(403, "denied_by_policy", { message: DENIAL, key: KEY, tier: "frozen-invoice" });

function allowed(version: number, settled: boolean, execution: Record<string, unknown>) {
  return representation(version, "approved", settled, {
    decision: { verdict: "approve", by: "policy:small", at: "2026-01-02T03:04:05Z", via: "policy", round: 1 },
    execution,
    policy: { verdict: "allow", approvals: 0, approvers: ["U1"], tier: 1, tier_name: "small", version: "sha256:" + "2".repeat(64) },
  });
}

function isDenial(e: unknown): true {
  assert.ok(e instanceof DeniedByPolicyError && e instanceof APIError);
  assert.equal(e.status, 403);
  assert.equal(e.code, "denied_by_policy");
  assert.equal(e.key, KEY);
  assert.equal(e.tier, "frozen-invoice");
  assert.equal(e.detail, DENIAL);
  return true;
}

describe("denied by policy", () => {
  test("a denial is thrown on every post, with the key and the rule", async () => {
    const f = await fake(denied());
    const client = new Client({ url: f.url, token: "t" });
    await assert.rejects(client.request(INTENT), isDenial);
    await assert.rejects(client.request(INTENT), isDenial);
    assert.equal(f.calls.length, 2, "a denial was sent again");
  });

  test("requestAndWait throws a denial without waiting", async () => {
    const f = await fake(denied());
    const started = performance.now();
    await assert.rejects(new Client({ url: f.url, token: "t" }).requestAndWait(INTENT), isDenial);
    assert.ok(performance.now() - started < 5000);
    assert.deepEqual(f.calls.map((c) => c.method), ["POST"]);
  });
});

describe("allowed by policy", () => {
  test("an allowed write is waited for like any approval", async () => {
    const done = { state: "succeeded", attempts: 1, provider_ref: "obj_1", response: { status: 201, body: {} } };
    const f = await fake(reply(201, allowed(1, false, { state: "ready", attempts: 0 })), reply(200, allowed(2, true, done)));
    const req = await new Client({ url: f.url, token: "t" }).requestAndWait(INTENT, { timeout: 30_000 });
    assert.equal(req.succeeded, true);
    assert.deepEqual([req.decision?.by, req.decision?.via], ["policy:small", "policy"]);
    const verdict: PolicyVerdict | undefined = req.policy?.verdict;
    assert.equal(verdict, "allow");
    assert.deepEqual([req.policy?.approvals, req.policy?.tierName, req.policy?.version], [0, "small", "sha256:" + "2".repeat(64)]);
    assert.deepEqual(f.calls.map((c) => c.method), ["POST", "GET"]);
  });
});

describe("RequestPolicy", () => {
  test("every member of the OpenAPI RequestPolicy is read", () => {
    const members = Object.keys(load("hook/openapi.json").components.schemas.RequestPolicy.properties);
    const camel = members.map((m) => m.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()));
    assert.deepEqual(Object.keys(requestFromJSON(representation()).policy ?? {}).sort(), camel.sort());
  });

  test("a policy stored before verdicts reads as ask", () => {
    const p = requestFromJSON(representation(1, "pending", false, { policy: { approvals: 1, approvers: ["U1"], tier: null } })).policy;
    assert.deepEqual([p?.verdict, p?.tierName, p?.version], ["ask", "", ""]);
  });
});
