// Copied by package_test.go into a fresh project the tarball was installed
// into (a module resolves packages from where it lies), and run there:
//
//   node installed.mjs VERSION KEY_VECTORS_JSON [LOCAL_SERVER_JS]
//
// It fails unless @countersign/client resolves inside that project's
// node_modules, says the version the release names, builds the README's
// client, and derives the shared vectors' keys. Given the SDK's compiled
// test helper (and COUNTERSIGN_BIN), it then runs the README's examples
// against a real serve, with the installed package: a request approved,
// and a gated function approved with the installed testing helpers, its
// receipt checked by the installed verifier.
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const [version, vectorsPath, localServer] = process.argv.slice(2);
const resolved = fileURLToPath(import.meta.resolve("@countersign/client"));
assert.ok(resolved.startsWith(process.cwd() + "/node_modules/@countersign/client/dist/src/"), `resolved to ${resolved}`);

const { Client, InvalidEffectError, intentKey, VERSION, fetchVerifier } = await import("@countersign/client");
const testing = await import("@countersign/client/testing");
assert.ok(fileURLToPath(import.meta.resolve("@countersign/client/testing")).startsWith(process.cwd() + "/node_modules/@countersign/client/dist/src/"));
assert.equal(typeof testing.approve, "function");
assert.equal(VERSION, version);
const manifest = JSON.parse(readFileSync("node_modules/@countersign/client/package.json", "utf8"));
assert.equal(manifest.version, version);
assert.equal(manifest.license, "Apache-2.0");
assert.equal(manifest.private, undefined);
assert.deepEqual(Object.keys(manifest.dependencies ?? {}), [], "no runtime dependency");
// The receipt verifier's command line is installed as a bin.
assert.ok(existsSync("node_modules/.bin/countersign-receipt"), "no node_modules/.bin/countersign-receipt");

// The README's first lines: a client, and the error it catches.
new Client({ url: "http://127.0.0.1:8080", token: "token" });
assert.equal(typeof InvalidEffectError, "function");

const integersOnly = (v) =>
  typeof v === "number" ? Number.isSafeInteger(v)
    : v !== null && typeof v === "object" ? Object.values(v).every(integersOnly) : true;
let checked = 0;
for (const v of JSON.parse(readFileSync(vectorsPath, "utf8")).keys) {
  if (!integersOnly(v.intent)) continue; // a fraction would round on the way in
  const { run_id, step, tool, effect } = v.intent;
  assert.equal(intentKey(run_id, step, tool, effect), v.key, v.name);
  checked++;
}
assert.ok(checked >= 5, `only ${checked} integer-only key vectors`);
console.log(`@countersign/client ${VERSION} from ${resolved}: ${checked} keys`);

if (localServer) {
  // The SDK's test helper starts serve, and approves with countersign approve.
  const { Server, TOKEN } = await import(pathToFileURL(localServer).href);
  const server = await Server.start();
  try {
    const token = TOKEN;
    const runId = `r-${Date.now().toString(36)}`;
    // The README's example (its tool is billing.credit; the helper's is sdk.credit, of the same schema),
    // approved by the reviewer once the request is pending.
    const client = new Client({ url: server.url, token });
    const effect = { invoice: "inv_8841", amount_cents: 4200, currency: "USD" };
    const pending = await client.request({ tool: "sdk.credit", runId, step: 6, effect, summary: "Credit 42.00 USD to inv_8841" });
    await server.approve(pending);
    let req;
    try {
      req = await client.requestAndWait({ tool: "sdk.credit", runId, step: 6, effect,
        summary: "Credit 42.00 USD to inv_8841" }, { timeout: 3_600_000 });
    } catch (e) {
      if (e instanceof InvalidEffectError) console.error(e.errors); throw e;
    }
    assert.deepEqual([req.status, req.succeeded, req.key], ["approved", true, pending.key]);
    const writes = server.provider.received.filter((d) => d.headers["idempotency-key"] === req.key);
    assert.equal(writes.length, 1);
    assert.ok(writes[0].verified);
    console.log(`README example: ${req.status} ${req.succeeded}, written once under ${req.key}`);

    // The gated function, on the helper's agent-executed tool, approved with
    // the installed testing helper; the receipt fn gets verifies.
    const verifier = await fetchVerifier(server.url + "/.well-known/jwks.json");
    const payoutEffect = { account: "acct_readme", amount_cents: 4200 };
    const payout = client.gated("sdk.payout", async (e, { key, receipt }) => {
      const claims = await verifier.verify(receipt, { key, tool: "sdk.payout", body: JSON.stringify(e) });
      return { providerRef: `pay_${claims.key.slice(3, 11)}` };
    }, { journalDir: mkdtempSync(join(tmpdir(), "countersign-journal-")) });
    const paying = payout({ runId, step: 7, effect: payoutEffect });
    const payoutKey = intentKey(runId, 7, "sdk.payout", payoutEffect);
    for (let tries = 0; ; tries++) {
      try {
        await testing.approve(payoutKey, server.reviewer);
        break;
      } catch (e) {
        if (!(e instanceof testing.LocalReviewError) || e.code !== "not_found" || tries > 200) throw e;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    }
    const paid = await paying;
    assert.deepEqual([paid.replayed, paid.request.execution?.state, paid.providerRef], [false, "succeeded", `pay_${payoutKey.slice(3, 11)}`]);
    console.log(`gated example: ${paid.request.execution?.state} under ${paid.request.key}`);
  } finally {
    await server.close();
  }
}
