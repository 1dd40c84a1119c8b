// An agent process of crosslang_test.go: one gated write of an
// agent-executed tool, with the TypeScript SDK. Compiled with the SDK's
// sources (tsconfig.json beside it), then run as
//
//   node gated-child.mjs URL TOKEN TOOL RUN_ID EFFECT_JSON CALLS JOURNAL_DIR
//
// it prints the request's key as one JSON line before it asks, so the test
// can approve it, then the gated call's result as another. The function
// appends one JSON line to CALLS, the key, the receipt and the effect it
// was given in its canonical form (RFC 8785, the bytes whose SHA-256 the
// receipt holds), and returns the provider reference payout_ts_N, N the
// lines CALLS then holds.

import { appendFileSync, readFileSync } from "node:fs";

import { canonical, Client, intentKey } from "../../typescript/src/index.js";

const [url, token, tool, runId, effectJSON, calls, journalDir] = process.argv.slice(2) as [string, string, string, string, string, string, string];
const effect = JSON.parse(effectJSON) as Record<string, unknown>;
const client = new Client({ url, token, timeout: 30_000 });
const payout = client.gated(tool, (approved, { key, receipt }) => {
  appendFileSync(calls, JSON.stringify({ key, receipt, body: canonical(approved) }) + "\n");
  const lines = readFileSync(calls, "utf8").split("\n").filter((l) => l !== "");
  return { providerRef: `payout_ts_${lines.length}` };
}, { journalDir });

process.stdout.write(JSON.stringify({ key: intentKey(runId, 1, tool, effect) }) + "\n");
const done = await payout({ runId, step: 1, effect, summary: "Pay out, from TypeScript" }, { timeout: 30_000 });
process.stdout.write(JSON.stringify({ called: !done.replayed, state: done.request.execution?.state, provider_ref: done.providerRef }) + "\n");
