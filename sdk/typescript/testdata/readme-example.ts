// README.md's examples, as a project that installed the tarball writes them;
// package_test.go type-checks it there against the installed declarations.
import { Client, InvalidEffectError } from "@countersign/client";

declare const token: string;

const client = new Client({ url: "http://127.0.0.1:8080", token });
const effect = { invoice: "inv_8841", amount_cents: 4200, currency: "USD" };
try {
  const req = await client.requestAndWait({ tool: "billing.credit", runId: "r-7f3a", step: 6, effect,
    summary: "Credit 42.00 USD to inv_8841" }, { timeout: 3_600_000 });
  console.log(req.status, req.succeeded);             // approved true: written once, under req.key
} catch (e) {
  if (e instanceof InvalidEffectError) console.error(e.errors); else throw e; // every violation, by JSON pointer
}

// Gated functions, receipts and the testing helpers, as README.md shows them.
import { fetchVerifier, ReceiptError } from "@countersign/client";
import { approve, reject } from "@countersign/client/testing";

interface Credit { invoice: string; amount_cents: number; currency: string }
const credit = client.gated("billing.credit", async (effect: Credit, { key, receipt }) => {
  const resp = await fetch("https://billing.example/credits", { method: "POST", body: JSON.stringify(effect),
    headers: { "Content-Type": "application/json", "Idempotency-Key": key, "Countersign-Receipt": receipt } });
  if (!resp.ok) throw new Error(`billing answered ${resp.status}`);  // reported failed, with this message
  return { providerRef: ((await resp.json()) as { id: string }).id, detail: "credited" };
});
const { value, replayed } = await credit({ runId: "r-7f3a", step: 6, effect, summary: "Credit 42.00 USD" });
const ref: string | undefined = value?.providerRef;
console.log(ref, replayed);

declare const request: Request;
declare const rawBody: string;
const verifier = await fetchVerifier("https://countersign.example/.well-known/jwks.json");
try {
  const claims = await verifier.verifyRequest(request.headers, rawBody, "billing.credit");
  console.log(claims.decided_by);
} catch (e) {
  if (e instanceof ReceiptError) console.error(e.code); else throw e;
}

declare const dataDir: string, config: string, req: { id: string; key: string };
await approve(req.id, { dataDir, config });
await reject(req.key, { reason: "Wrong invoice.", as: "local:ana" });
