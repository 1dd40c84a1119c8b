// What check.mjs and gateway.mjs share: the transport the environment
// names, and the line-by-line conversation with the Go test that runs them.
//
// Environment: MCP_TRANSPORT (stdio or http); for stdio MCP_COMMAND,
// MCP_ARGS (a JSON array) and MCP_ENV (a JSON object); for http MCP_URL and
// MCP_TOKEN.
import assert from "node:assert/strict";
import { createInterface } from "node:readline";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const env = process.env;
const input = createInterface({ input: process.stdin });
const lines = input[Symbol.asyncIterator]();

/** say prints one event for the test. */
export const say = (event) => process.stdout.write(JSON.stringify(event) + "\n");

/** ask prints an event and waits for the test's answer: any line. */
export const ask = async (event) => {
  say(event);
  const { done } = await lines.next();
  assert.equal(done, false, `the test closed stdin instead of answering ${event.event}`);
};

/** done lets the process end: stdin would keep it alive. */
export const done = () => input.close();

/** transport is the MCP client transport the environment names. */
export function transport() {
  if (env.MCP_TRANSPORT === "stdio") {
    return new StdioClientTransport({
      command: env.MCP_COMMAND,
      args: JSON.parse(env.MCP_ARGS),
      env: JSON.parse(env.MCP_ENV),
      stderr: "inherit",
    });
  }
  return new StreamableHTTPClientTransport(new URL(env.MCP_URL), {
    requestInit: { headers: { Authorization: `Bearer ${env.MCP_TOKEN}` } },
  });
}
