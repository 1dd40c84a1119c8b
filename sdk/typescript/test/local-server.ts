// A real countersign for the tests: the binary built from this repository,
// serving on the embedded store with a configuration of its own, a provider
// its dispatches reach, an agent's callback endpoint, and a local reviewer
// who decides through `countersign approve|reject` (the package's testing
// helpers).

import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type IncomingMessage, type Server as HTTPServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { SignatureError, verifySignature, type Request } from "@countersign/client";
import { approve, edit, reject } from "@countersign/client/testing";
import { REPO } from "./shared.js";

export const TOKEN = "sdk-typescript-agent-token";
export const CALLBACK_TOKEN = "sdk-typescript-callback-agent-token";
export const DISPATCH_SECRET = "sdk-typescript-dispatch-secret";
export const CALLBACK_SECRET = "sdk-typescript-callback-secret";
export const REVIEWER = "local:reviewer";

/** A request an endpoint received, and whether its v2 signature held. */
export interface Received {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  body: Uint8Array;
  verified: boolean;
}

/**
 * An HTTP endpoint on 127.0.0.1 that checks each request's v2 signature as
 * a receiver must (the raw path of the request line, the raw body), records
 * it and answers 201, or 401 when the signature does not hold.
 */
export class Endpoint {
  readonly received: Received[] = [];
  private readonly server: HTTPServer;
  private waiters: (() => void)[] = [];
  url = "";

  private constructor(secret: string) {
    this.server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        const body = new Uint8Array(Buffer.concat(chunks));
        const header = String(req.headers["countersign-signature"] ?? "");
        let verified = true;
        try {
          await verifySignature(secret, header, body, {
            method: req.method ?? "",
            path: (req.url ?? "").split("?")[0]!,
            idempotencyKey: String(req.headers["idempotency-key"] ?? ""),
            deliveryId: String(req.headers["countersign-delivery"] ?? ""),
          });
        } catch (e) {
          if (!(e instanceof SignatureError)) throw e;
          verified = false;
        }
        this.received.push({ method: req.method ?? "", path: req.url ?? "", headers: req.headers, body, verified });
        const answer = JSON.stringify({ id: `obj_${this.received.length}` });
        res.writeHead(verified ? 201 : 401, { "Content-Type": "application/json" });
        res.end(answer);
        for (const wake of this.waiters.splice(0)) wake();
      });
    });
  }

  static async start(secret: string): Promise<Endpoint> {
    const e = new Endpoint(secret);
    await new Promise<void>((resolve) => e.server.listen(0, "127.0.0.1", resolve));
    e.url = `http://127.0.0.1:${(e.server.address() as AddressInfo).port}`;
    return e;
  }

  /** Resolves once a received request satisfies match, or rejects after timeout ms. */
  async until(match: (r: Received) => boolean, timeout = 20_000): Promise<Received> {
    const deadline = performance.now() + timeout;
    for (;;) {
      const found = this.received.find(match);
      if (found) return found;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error("the endpoint received nothing that matched in time");
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

/** The countersign binary: COUNTERSIGN_BIN when the caller built it (the Go test does), else built here. */
function binary(dir: string): string {
  const given = process.env.COUNTERSIGN_BIN;
  if (given) return given;
  const out = join(dir, "countersign");
  const build = spawnSync("go", ["build", "-o", out, "./cmd/countersign"], { cwd: REPO, stdio: "inherit" });
  if (build.status !== 0) throw new Error("building countersign failed (or set COUNTERSIGN_BIN to a built binary)");
  return out;
}

const sha256 = (s: string) => createHash("sha256").update(s).digest("hex");

function config(provider: string, callback: string): string {
  return `agents:
  - name: sdk-agent
    token_sha256: ${sha256(TOKEN)}
  - name: sdk-callback-agent
    token_sha256: ${sha256(CALLBACK_TOKEN)}
    callback: {url: "${callback}/hooks/countersign", secret: "${CALLBACK_SECRET}"}
callbacks:
  poll: 100ms
tools:
  sdk.credit:
    approvers: [${REVIEWER}]
    description: Credit an invoice, in cents.
    dispatch: {method: POST, url: "${provider}/credits", timeout: 5s, secret: "${DISPATCH_SECRET}"}
    effect_schema:
      type: object
      required: [invoice, amount_cents, currency]
      additionalProperties: false
      properties:
        invoice: {type: string, pattern: "^inv_[A-Za-z0-9]+$"}
        amount_cents: {type: integer, minimum: 1}
        currency: {enum: [USD, EUR]}
    tiers:
      - {name: frozen-invoice, when: {field: invoice, eq: inv_frozen}, deny: "Credits to a frozen invoice are never sent."}
      - {name: small, when: {field: amount_cents, lte: 100}, approvals: 0}
  sdk.note:
    approvers: [${REVIEWER}]
    dispatch: {method: POST, url: "${provider}/notes", timeout: 5s, secret: "${DISPATCH_SECRET}"}
  sdk.payout:
    approvers: [${REVIEWER}]
    description: Pay out to an account, in cents; the agent sends it.
    execute: agent
    outcome_timeout: 10m
    effect_schema:
      type: object
      required: [account, amount_cents]
      properties:
        account: {type: string}
        amount_cents: {type: integer, minimum: 1}
`;
}

/** countersign serve, started for the tests, stopped (or killed) and started again on the same data and port. */
export class Server {
  readonly dir: string;
  url = "";
  private process: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private log = "";
  readonly bin: string;

  private constructor(
    readonly provider: Endpoint,
    readonly callbacks: Endpoint,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), "countersign-sdk-typescript-"));
    this.bin = binary(this.dir);
    writeFileSync(join(this.dir, "countersign.yml"), config(provider.url, callbacks.url));
  }

  static async start(): Promise<Server> {
    const server = new Server(await Endpoint.start(DISPATCH_SECRET), await Endpoint.start(CALLBACK_SECRET));
    try {
      await server.serve("127.0.0.1:0");
    } catch (e) {
      await server.close();
      throw e;
    }
    return server;
  }

  /** The configuration file serve runs with. */
  get config(): string {
    return join(this.dir, "countersign.yml");
  }

  /** serve's data directory, where countersign approve and reject find its socket. */
  get dataDir(): string {
    return join(this.dir, "data");
  }

  /** This process's environment without countersign's and Slack's settings, which the tests set themselves. */
  env(): Record<string, string> {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (v !== undefined && !k.startsWith("COUNTERSIGN_") && !k.startsWith("SLACK_")) env[k] = v;
    }
    return env;
  }

  /** Starts serve listening on listen; resolves once it listens and takes local reviews. */
  async serve(listen: string): Promise<void> {
    const env = this.env();
    Object.assign(env, {
      COUNTERSIGN_CONFIG: this.config,
      COUNTERSIGN_DATA_DIR: this.dataDir,
      COUNTERSIGN_LISTEN: listen,
      COUNTERSIGN_LOG_FORMAT: "json",
    });
    this.log = "";
    const child = spawn(this.bin, ["serve"], { env, stdio: ["ignore", "pipe", "pipe"] });
    this.process = child;
    this.exited = new Promise((resolve) => child.once("exit", () => resolve()));
    this.url = await new Promise<string>((resolve, reject) => {
      let url = "";
      let reviews = false;
      const timer = setTimeout(() => reject(new Error(`countersign serve did not start:\n${this.log}`)), 30_000);
      const read = (chunk: Buffer) => {
        this.log += chunk.toString("utf8");
        if (url && reviews) return;
        for (const line of this.log.split("\n")) {
          let e: Record<string, unknown>;
          try {
            e = JSON.parse(line) as Record<string, unknown>;
          } catch {
            continue;
          }
          if (e.msg === "listening") url = "http://" + String(e.addr);
          else if (e.msg === "local reviews listening") reviews = true;
        }
        if (url && reviews) {
          clearTimeout(timer);
          resolve(url);
        }
      };
      child.stdout.on("data", read);
      child.stderr.on("data", read);
      child.once("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(`countersign serve exited ${code}:\n${this.log}`));
      });
    });
  }

  /** The port serve listens on. */
  get port(): number {
    return Number(new URL(this.url).port);
  }

  logs(): string {
    return this.log;
  }

  /** What countersign approve and reject need to reach this serve. */
  get reviewer(): { dataDir: string; config: string; binary: string; env: Record<string, string> } {
    return { dataDir: this.dataDir, config: this.config, binary: this.bin, env: this.env() };
  }

  /** Approves request (or the request ref names) as the local reviewer, with countersign approve. */
  async approve(request: Request | string): Promise<void> {
    await approve(typeof request === "string" ? request : request.id, this.reviewer);
  }

  /** Approves request with its effect changed, as the local reviewer, with countersign edit; resolves with the line it printed. */
  async edit(request: Request | string, effect: Record<string, unknown>): Promise<string> {
    return edit(typeof request === "string" ? request : request.id, effect, this.reviewer);
  }

  /** Rejects request as the local reviewer, with countersign reject. */
  async reject(request: Request | string, reason?: string): Promise<void> {
    await reject(typeof request === "string" ? request : request.id, { ...this.reviewer, ...(reason === undefined ? {} : { reason }) });
  }

  /** Kills serve at once (SIGKILL): no request in flight is answered, nothing is shut down. */
  async kill(): Promise<void> {
    this.process?.kill("SIGKILL");
    await this.exited;
  }

  async close(): Promise<void> {
    if (this.process && this.process.exitCode === null && this.process.signalCode === null) {
      this.process.kill("SIGTERM");
      const timer = setTimeout(() => this.process?.kill("SIGKILL"), 15_000);
      await this.exited;
      clearTimeout(timer);
    }
    await this.provider.close();
    await this.callbacks.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
