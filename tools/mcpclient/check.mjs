// Drives countersign's MCP server with the TypeScript MCP SDK's client, over
// stdio or streamable HTTP, and reports what it saw. cmd/countersign's MCP
// test runs it, approves the write in the review inbox when asked, and
// checks the reports.
//
// The conversation with the test, one JSON object a line:
//   to stdout:  {"event": "approve", "request": {...}}  approve this request, then answer
//               {"event": "stop_countersign"}           make countersign unreachable, then answer
//               {"event": "report", ...}                what was seen, at the end
//   from stdin: any line, once the asked step is done.
//
// Environment: MCP_TRANSPORT (stdio or http); for stdio MCP_COMMAND,
// MCP_ARGS (a JSON array) and MCP_ENV (a JSON object); for http MCP_URL and
// MCP_TOKEN; TOOL (a configured tool with an effect_schema) and RUN_ID.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";
import { ask, done, say, transport } from "./conversation.mjs";

const env = process.env;

const client = new Client({ name: "countersign-mcp-check", version: "1.0.0" });
await client.connect(transport());
const report = { event: "report", server: client.getServerVersion() };

// The tools: the fixed ones and the typed one, whose schema holds the effect schema.
const { tools } = await client.listTools();
report.tools = tools.map((t) => t.name).sort();
const typedName = "request_" + env.TOOL.replace(/[^A-Za-z0-9_-]/g, "_");
const typed = tools.find((t) => t.name === typedName);
assert.ok(typed, `no ${typedName} among ${report.tools}`);
report.typedInputSchema = typed.inputSchema;

const text = (res) => res.content.filter((c) => c.type === "text").map((c) => c.text).join(" ");
const effect = { invoice: "inv_mcp1", amount_cents: 4200, currency: "USD" };

// request_write, then the same arguments again: the same request.
const write = { tool: env.TOOL, run_id: env.RUN_ID, step: 1, effect, summary: "Credit 42.00 USD to inv_mcp1" };
const first = await client.callTool({ name: "request_write", arguments: write });
assert.equal(first.isError, undefined, text(first));
report.first = { structured: first.structuredContent, text: text(first) };
const again = await client.callTool({ name: "request_write", arguments: { ...write, summary: "reworded, same write" } });
report.again = { structured: again.structuredContent, text: text(again) };

// The typed tool, for a second write, cancelled.
const second = await client.callTool({ name: typedName, arguments: { run_id: env.RUN_ID, step: 2, effect: { ...effect, amount_cents: 100 } } });
assert.equal(second.isError, undefined, text(second));
const cancelled = await client.callTool({ name: "cancel_request", arguments: { ref: second.structuredContent.key } });
report.cancelled = { structured: cancelled.structuredContent, text: text(cancelled) };

// wait_for_outcome, with a progress token, while the test approves the first
// write: once the first progress notification says the wait has begun, so
// that the write is not settled before the wait starts (its progress would
// then race the answer).
const progress = [];
let begun;
const heard = new Promise((resolve) => { begun = resolve; });
const waiting = client.callTool({ name: "wait_for_outcome", arguments: { ref: first.structuredContent.key, timeout_seconds: 50 } },
  undefined, { onprogress: (p) => { progress.push(p); begun(); }, resetTimeoutOnProgress: true, timeout: 120_000 });
await Promise.race([heard, waiting]);
await ask({ event: "approve", request: first.structuredContent });
const outcome = await waiting;
report.outcome = { structured: outcome.structuredContent, text: text(outcome), isError: outcome.isError ?? false };
report.progress = progress;

const got = await client.callTool({ name: "get_request", arguments: { ref: first.structuredContent.id } });
report.get = { structured: got.structuredContent, text: text(got) };
const listed = await client.callTool({ name: "list_requests", arguments: { run_id: env.RUN_ID, limit: 1 } });
const next = await client.callTool({ name: "list_requests", arguments: { run_id: env.RUN_ID, limit: 1, cursor: listed.structuredContent.next_cursor } });
report.list = [listed.structuredContent, next.structuredContent];
const listedTools = await client.callTool({ name: "list_tools", arguments: {} });
report.listTools = { structured: listedTools.structuredContent, text: text(listedTools) };

// Protocol errors: an unknown tool, arguments that fail the schema.
try {
  await client.callTool({ name: "request_nothing_such", arguments: {} });
  report.unknownTool = { thrown: false };
} catch (e) {
  report.unknownTool = { thrown: true, mcpError: e instanceof McpError, code: e.code, message: e.message };
}
const bad = await client.callTool({ name: typedName, arguments: { run_id: env.RUN_ID, step: 3, effect: { invoice: "inv_mcp1", amount_cents: "12", currency: "GBP" } } });
report.badEffect = { isError: bad.isError ?? false, structured: bad.structuredContent, text: text(bad) };
const stray = await client.callTool({ name: typedName, arguments: { run_id: env.RUN_ID, step: 3, effect, colour: "red" } });
report.strayArgument = { isError: stray.isError ?? false, structured: stray.structuredContent, text: text(stray) };

// countersign out of reach (stdio: the MCP server is its client): a tool
// error, twice, and the MCP server still answers.
if (env.MCP_TRANSPORT === "stdio") {
  await ask({ event: "stop_countersign" });
  const down = [];
  for (const call of [{ name: "get_request", arguments: { ref: first.structuredContent.key } }, { name: "list_tools", arguments: {} }]) {
    const res = await client.callTool(call);
    down.push({ isError: res.isError ?? false, structured: res.structuredContent, text: text(res) });
  }
  await client.ping();
  report.unreachable = down;
}

say(report);
await client.close();
done();
