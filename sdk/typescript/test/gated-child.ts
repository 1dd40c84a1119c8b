// The agent process of gated.test.ts's crash test: one gated payout, its function
// sending the write to the test's provider. Run as
//
//   node gated-child.js URL TOKEN JOURNAL_DIR PROVIDER_URL RUN_ID
//
// it prints how the call ended as one JSON line and exits 0; the test
// kills it (SIGKILL) while its outcome report is held.

import { Client } from "@countersign/client";
import { pay } from "./agent-provider.js";

const [url, token, journalDir, providerUrl, runId] = process.argv.slice(2) as [string, string, string, string, string];
const client = new Client({ url, token, timeout: 10_000 });
const payout = client.gated("sdk.payout", (effect, { key, receipt }) => pay(providerUrl, effect, key, receipt), { journalDir });
const done = await payout({ runId, step: 1, effect: { account: "acct_crash", amount_cents: 7700 }, summary: "Pay out 77.00" });
process.stdout.write(JSON.stringify({ replayed: done.replayed, providerRef: done.providerRef, state: done.request.execution?.state }) + "\n");
