// README.md's example, as a project that installed the tarball writes it;
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
