// Copied by package_test.go into a fresh project the tarball was installed
// into (a module resolves packages from where it lies), and run there:
//
//   node installed.mjs VERSION KEY_VECTORS_JSON [LOCAL_SERVER_JS]
//
// It fails unless @countersign/client resolves inside that project's
// node_modules, says the version the release names, builds the README's
// client, and derives the shared vectors' keys. Given the SDK's compiled
// test helper (and COUNTERSIGN_BIN), it then runs the README's example
// against a real serve, with the installed package.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const [version, vectorsPath, localServer] = process.argv.slice(2);
const resolved = fileURLToPath(import.meta.resolve("@countersign/client"));
assert.ok(resolved.startsWith(process.cwd() + "/node_modules/@countersign/client/dist/src/"), `resolved to ${resolved}`);

const { Client, InvalidEffectError, intentKey, VERSION } = await import("@countersign/client");
assert.equal(VERSION, version);
const manifest = JSON.parse(readFileSync("node_modules/@countersign/client/package.json", "utf8"));
assert.equal(manifest.version, version);
assert.equal(manifest.license, "Apache-2.0");
assert.equal(manifest.private, undefined);
assert.deepEqual(Object.keys(manifest.dependencies ?? {}), [], "no runtime dependency");

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
  // The SDK's test helper starts serve and approves in its inbox.
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
  } finally {
    await server.close();
  }
}
