// A scripted countersign, for what a real one will not do on demand: fail
// and then answer.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** One request the fake received. */
export interface Received {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: string;
}

export type Answer = (req: IncomingMessage, res: ServerResponse) => void;

/** A request as GET /v1/requests/{ref} answers it. */
export function representation(version = 1, status = "pending", settled = false, overrides: Record<string, unknown> = {}) {
  return {
    id: "0c5b3a9e-5d1f-4f0e-8a43-9b2f1d7c6e10",
    key: "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c",
    key_short: "wa_d0290121a…634c", status, round: 1, run_id: "r-7f3a", step: 6, tool: "billing.credit",
    effect: { amount_cents: 4200, currency: "USD", invoice: "inv_8841" }, summary: "Credit 42.00 USD", reason: "",
    requested_by: "billing-agent", payload_hash: "sha256:" + "0".repeat(64),
    created_at: "2026-01-02T03:04:05.123456789Z", expires_at: "2026-01-05T03:04:05Z", decision: null,
    execution: null, settled, version, callback: null, policy: {
      verdict: "ask", approvals: 1, approvers: ["U1"], tier: null, tier_name: "default", version: "sha256:" + "1".repeat(64),
    },
    votes: [], ...overrides,
  };
}

/** An answer with a JSON body. */
export function reply(status: number, body?: unknown, headers: Record<string, string> = {}): Answer {
  return (_req, res) => {
    const raw = body === undefined ? "" : JSON.stringify(body);
    res.writeHead(status, { "Content-Type": "application/json", "Content-Length": Buffer.byteLength(raw), ...headers });
    res.end(raw);
  };
}

/** countersign's error envelope. */
export function refusal(status: number, code: string, fields: Record<string, unknown> = {}, headers: Record<string, string> = {}): Answer {
  return reply(status, { error: { code, message: `refused: ${code}`, request_id: "req_" + "a".repeat(24), ...fields } }, headers);
}

/** Closes the connection without an answer. */
export const hangUp: Answer = (req) => {
  req.socket.destroy();
};

/**
 * A long-poll's answer as countersign gives it when nothing changes: body,
 * once the call's ?wait= (a Go duration in s or ms) has passed.
 */
export function holdForWait(body: unknown): Answer {
  return (req, res) => {
    const wait = new URL(req.url ?? "", "http://x").searchParams.get("wait") ?? "0s";
    const millis = wait.endsWith("ms") ? parseInt(wait, 10) : parseInt(wait, 10) * 1000;
    const timer = setTimeout(() => reply(200, body)(req, res), millis);
    res.on("close", () => clearTimeout(timer));
  };
}

/** An answer that never comes: the connection stays open until the fake closes. */
export const stall: Answer = () => {};

/**
 * An HTTP server on 127.0.0.1 that answers each call with the next scripted
 * answer (the last one again once the script runs out) and records the calls.
 */
export class Fake {
  readonly calls: Received[] = [];
  private server: Server;
  url = "";

  constructor(readonly answers: Answer[]) {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        this.calls.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") });
        const answer = this.answers.length > 1 ? this.answers.shift()! : this.answers[0]!;
        answer(req, res);
      });
    });
  }

  static async start(...answers: Answer[]): Promise<Fake> {
    const fake = new Fake(answers);
    await new Promise<void>((resolve) => fake.server.listen(0, "127.0.0.1", resolve));
    fake.url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
    return fake;
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
