// Drives countersign's MCP gateway with the TypeScript MCP SDK's client,
// over stdio (countersign mcp) or streamable HTTP (/mcp), in front of the
// real filesystem and memory MCP servers, and reports what it saw.
// cmd/countersign's gateway test runs it and decides each gated call when
// asked.
//
// The conversation with the test, one JSON object a line:
//   to stdout:  {"event": "decide", "tool": "...", "verdict": "approve"|"reject"}
//                   a call of tool is under way: decide its pending request, then answer
//               {"event": "report", ...}   what was seen, at the end
//   from stdin: any line, once the asked step is done.
//
// Environment: MCP_TRANSPORT (stdio or http); for stdio MCP_COMMAND,
// MCP_ARGS (a JSON array) and MCP_ENV (a JSON object); for http MCP_URL and
// MCP_TOKEN; DIR (the filesystem server's directory) and RUN_ID.
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { ask, done, say, transport } from "./conversation.mjs";

const env = process.env;

const client = new Client({ name: "countersign-gateway-check", version: "1.0.0" });
await client.connect(transport());
const report = { event: "report" };
const text = (res) => (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join(" ");
const seen = (res) => ({ isError: res.isError ?? false, text: text(res), structured: res.structuredContent ?? null });

const { tools } = await client.listTools();
report.tools = tools.map((t) => t.name).sort();
const writeFile = tools.find((t) => t.name === "fs__write_file");
assert.ok(writeFile, `no fs__write_file among ${report.tools}`);
report.writeFileSchema = writeFile.inputSchema;

// A read passes straight through.
report.read = seen(await client.callTool({ name: "fs__read_text_file", arguments: { path: `${env.DIR}/hello.txt` } }));

// A gated call, decided while it waits (with a progress token), answers the
// upstream's own result; then the same call again, the same request.
const gated = async (name, args, step, verdict) => {
  const progress = [];
  const call = client.callTool({ name, arguments: args, _meta: { "countersign/run_id": env.RUN_ID, "countersign/step": step } },
    undefined, { onprogress: (p) => progress.push(p), resetTimeoutOnProgress: true, timeout: 120_000 });
  await ask({ event: "decide", tool: name, verdict });
  return { ...seen(await call), progress: progress.length };
};
const content = `approved through countersign (${env.MCP_TRANSPORT})`;
report.write = await gated("fs__write_file", { path: `${env.DIR}/approved.txt`, content }, 1, "approve");
report.writeAgain = seen(await client.callTool({ name: "fs__write_file", arguments: { path: `${env.DIR}/approved.txt`, content },
  _meta: { "countersign/run_id": env.RUN_ID, "countersign/step": 1 } }));
report.rejected = await gated("fs__write_file", { path: `${env.DIR}/rejected.txt`, content: "never" }, 2, "reject");

// The memory server: a gated create_entities, then a read of the graph.
report.entities = await gated("memory__create_entities",
  { entities: [{ name: `ticket-${env.MCP_TRANSPORT}`, entityType: "ticket", observations: ["approved"] }] }, 3, "approve");
report.graph = seen(await client.callTool({ name: "memory__read_graph", arguments: {} }));

say(report);
await client.close();
done();
