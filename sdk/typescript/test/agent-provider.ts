// What gated functions write to in the tests: a provider of an
// agent-executed tool, as a provider would build one with the SDK's
// ReceiptVerifier. It takes a write only with a receipt that approves it
// (the Idempotency-Key, the tool, the body's digest), answers 201 with an
// id, and counts every write it was sent; a refused receipt is 403 with the
// refusal's code.

import { createServer, type IncomingMessage, type Server as HTTPServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import { ReceiptError, type ReceiptClaims, type ReceiptVerifier } from "@countersign/client";

/** One write the provider was sent. */
export interface Write {
  key: string;
  receipt: string;
  body: string;
  /** The receipt's claims when it approved the write; else the refusal's code. */
  claims: ReceiptClaims | undefined;
  refusal: string;
  /** The id the provider answered for a write it took. */
  id: string;
}

export class AgentProvider {
  readonly writes: Write[] = [];
  url = "";
  private readonly server: HTTPServer;
  private waiters: (() => void)[] = [];

  private constructor(
    private readonly verifier: ReceiptVerifier,
    private readonly tool: string,
  ) {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const write: Write = {
          key: String(req.headers["idempotency-key"] ?? ""), receipt: String(req.headers["countersign-receipt"] ?? ""), body,
          claims: undefined, refusal: "", id: "",
        };
        try {
          write.claims = await this.verifier.verifyRequest(req.headers, body, this.tool);
        } catch (e) {
          if (!(e instanceof ReceiptError)) throw e;
          write.refusal = e.code;
        }
        this.writes.push(write);
        if (write.claims) write.id = `pay_${this.writes.length}`;
        const answer = write.claims ? { id: write.id } : { error: write.refusal };
        res.writeHead(write.claims ? 201 : 403, { "Content-Type": "application/json" });
        res.end(JSON.stringify(answer));
        for (const wake of this.waiters.splice(0)) wake();
      });
    });
  }

  static async start(verifier: ReceiptVerifier, tool: string): Promise<AgentProvider> {
    const p = new AgentProvider(verifier, tool);
    await new Promise<void>((resolve) => p.server.listen(0, "127.0.0.1", resolve));
    p.url = `http://127.0.0.1:${(p.server.address() as AddressInfo).port}`;
    return p;
  }

  /** The writes sent under key. */
  sent(key: string): Write[] {
    return this.writes.filter((w) => w.key === key);
  }

  /** Resolves once a write under key arrived, or rejects after timeout ms. */
  async until(key: string, timeout = 20_000): Promise<Write> {
    const deadline = performance.now() + timeout;
    for (;;) {
      const found = this.writes.find((w) => w.key === key);
      if (found) return found;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`the provider got no write under ${key} in time`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Sends the approved write to the provider at url, as a gated function does; returns the provider's id, or throws on a refusal. */
export async function pay(url: string, effect: unknown, key: string, receipt: string): Promise<{ providerRef: string; detail: string }> {
  const resp = await fetch(url + "/payouts", {
    method: "POST",
    headers: { "Content-Type": "application/json", "Idempotency-Key": key, "Countersign-Receipt": receipt },
    body: JSON.stringify(effect),
  });
  const body = (await resp.json()) as { id?: string; error?: string };
  if (resp.status !== 201) throw new Error(`the provider refused the payout: ${body.error ?? resp.status}`);
  return { providerRef: body.id!, detail: "paid out" };
}
