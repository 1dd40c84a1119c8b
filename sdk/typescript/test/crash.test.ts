// A retry after countersign was killed mid-request lands on the same key:
// serve stores the request, is killed (SIGKILL) before its answer reaches
// the agent, and starts again on the same data and port; the client's
// retry, the same bytes, is answered with the stored request, replayed.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createConnection, createServer, type Server as TCPServer, type Socket } from "node:net";
import type { AddressInfo } from "node:net";
import { after, test } from "node:test";

import { Client, intentKey } from "@countersign/client";
import { Server, TOKEN } from "./local-server.js";

/**
 * A TCP relay between the agent and serve. Armed, it lets the first
 * POST /v1/requests through, and when serve's answer to it comes back,
 * holds the answer, calls onAnswer (which kills serve) and drops the
 * agent's connection instead: the request is stored, its answer lost.
 */
class Relay {
  url = "";
  held = "";
  private readonly server: TCPServer;
  private readonly sockets = new Set<Socket>();
  private armed = true;

  constructor(
    private readonly upstreamPort: () => number,
    private readonly onAnswer: () => Promise<void>,
  ) {
    this.server = createServer((agent) => {
      const upstream = createConnection(this.upstreamPort(), "127.0.0.1");
      this.sockets.add(agent).add(upstream);
      let holding = false;
      agent.on("data", (chunk: Buffer) => {
        if (this.armed && chunk.toString("latin1").startsWith("POST /v1/requests HTTP/1.1")) {
          this.armed = false;
          holding = true;
        }
        upstream.write(chunk);
      });
      upstream.on("data", (chunk: Buffer) => {
        if (!holding) {
          agent.write(chunk);
          return;
        }
        this.held += chunk.toString("latin1");
        if (complete(this.held)) {
          holding = false;
          void this.onAnswer().then(() => agent.destroy());
        }
      });
      // serve down (refused, or killed): the agent sees its connection drop.
      upstream.on("error", () => agent.destroy());
      upstream.on("close", () => agent.destroy());
      agent.on("error", () => upstream.destroy());
      agent.on("close", () => upstream.destroy());
    });
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve) => this.server.listen(0, "127.0.0.1", resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

// complete reports whether an HTTP/1.1 answer is whole: its head and as
// many bytes of body as its Content-Length says.
function complete(answer: string): boolean {
  const end = answer.indexOf("\r\n\r\n");
  const length = /\r\ncontent-length: *([0-9]+)\r\n/i.exec(answer.slice(0, end + 2));
  return end >= 0 && length !== null && answer.length - end - 4 >= Number(length[1]);
}

let server: Server | undefined;
let relay: Relay | undefined;
after(async () => {
  await relay?.close();
  await server?.close();
});

test("a retry after serve was killed with the request stored, before its answer, is answered with the same request, replayed", async () => {
  server = await Server.start();
  const port = server.port;
  let restarted: Promise<void> | undefined;
  relay = new Relay(
    () => port,
    async () => {
      await server!.kill();
      // Started again in the background, as an operator's supervisor would;
      // meanwhile the agent's retries find nothing listening.
      restarted = server!.serve(`127.0.0.1:${port}`);
    },
  );
  await relay.listen();

  const run = `run-${randomUUID()}`;
  const effect = { invoice: "inv_9001", amount_cents: 1200, currency: "EUR" };
  const client = new Client({ url: relay.url, token: TOKEN, timeout: 10_000, retryFor: 60_000 });
  const req = await client.request({ tool: "sdk.credit", runId: run, step: 3, effect, summary: "Credit 12.00 EUR" });
  await restarted;

  assert.match(relay.held, /^HTTP\/1\.1 201 /, "the first answer, held back, was not the request's creation");
  const lost = JSON.parse(Buffer.from(relay.held.slice(relay.held.indexOf("\r\n\r\n") + 4), "latin1").toString("utf8")) as { id: string; key: string };
  assert.equal(req.replayed, true, "the retry was not answered as a replay");
  assert.equal(req.id, lost.id, "the retry landed on another request");
  assert.equal(req.key, lost.key);
  assert.equal(req.key, intentKey(run, 3, "sdk.credit", effect));
  assert.equal(server.port, port, "serve came back on another port");

  const direct = new Client({ url: server.url, token: TOKEN });
  const stored: string[] = [];
  for await (const r of direct.list({ runId: run })) stored.push(r.id);
  assert.deepEqual(stored, [req.id], "the run holds one request, not two");
});
