// The effect's type as a parameter: this file is checked by tsc --strict
// before it runs, so a type that does not flow through is a failed build.

import assert from "node:assert/strict";
import { after, describe, test } from "node:test";

import { Client, type Request } from "@countersign/client";
import { Fake, reply, representation } from "./fake.js";

interface Credit {
  invoice: string;
  amount_cents: number;
  currency: "USD" | "EUR";
}

const fakes: Fake[] = [];
after(() => Promise.all(fakes.map((f) => f.close())));

describe("Request<E>", () => {
  test("request<Credit> returns a Request<Credit>", async () => {
    const f = await Fake.start(reply(201, representation()), reply(200, representation(2, "rejected", true)));
    fakes.push(f);
    const client = new Client({ url: f.url, token: "t" });
    const credit: Credit = { invoice: "inv_8841", amount_cents: 4200, currency: "USD" };
    const req: Request<Credit> = await client.request<Credit>({ tool: "billing.credit", runId: "r-7f3a", step: 6, effect: credit });
    const cents: number = req.effect.amount_cents;
    assert.equal(cents, 4200);
    // @ts-expect-error: a Credit has no such member.
    assert.equal(req.effect.amount, undefined);
    const settled: Request<Credit> = await client.wait<Credit>(req.id, { timeout: 5000 });
    assert.equal(settled.effect.currency, "USD");
    // An interface without an index signature is an effect too.
    const untyped: Request = await client.request({ tool: "billing.credit", runId: "r-7f3a", step: 6, effect: credit });
    assert.equal(untyped.effect.invoice, "inv_8841");
  });

  test("the effect must be the type given", () => {
    const client = new Client({ url: "http://127.0.0.1:9", token: "t" });
    // Never called: the check is the compiler's.
    const typed = () =>
      // @ts-expect-error: amount_cents must be a number.
      client.request<Credit>({ tool: "billing.credit", runId: "r", step: 1, effect: { invoice: "i", amount_cents: "1", currency: "USD" } });
    assert.equal(typeof typed, "function");
  });
});
