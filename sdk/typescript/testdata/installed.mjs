// Copied by package_test.go into a fresh project the tarball was installed
// into (a module resolves packages from where it lies), and run there:
//
//   node installed.mjs VERSION KEY_VECTORS_JSON
//
// It fails unless @countersign/client resolves inside that project's
// node_modules, says the version the release names, builds the README's
// client, and derives the shared vectors' keys.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const [version, vectorsPath] = process.argv.slice(2);
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
