// @countersign/client/testing: deciding requests from an agent's tests, in
// a local run. approve, reject and edit run `countersign approve|reject|edit`, which
// decide as a local: reviewer through the socket of the serve running on
// the data directory (never the network), as a reviewer would.

import { execFile } from "node:child_process";

import { CountersignError } from "./errors.js";

export interface LocalReviewOptions {
  /** The local: reviewer to decide as; by default the only one the configuration names (see countersign approve --help). */
  as?: string;
  /** serve's data directory (COUNTERSIGN_DATA_DIR); the environment's by default. */
  dataDir?: string;
  /** serve's configuration file (COUNTERSIGN_CONFIG), which names the local reviewers; the environment's by default. */
  config?: string;
  /** The countersign binary: COUNTERSIGN_BIN, else countersign on the PATH. */
  binary?: string;
  /** The environment the command runs with; this process's by default. dataDir and config are set on top. */
  env?: Record<string, string | undefined>;
  /** Milliseconds the command may take; 60 000 by default. */
  timeout?: number;
}

export interface RejectOptions extends LocalReviewOptions {
  /** The reason the agent is told; a tool with reject_reason: required needs one. */
  reason?: string;
}

/**
 * A local review countersign refused (or could not make): `code` is the
 * refusal's (already_decided, not_approver, not_found, …), "" when the
 * command failed without one (no serve on the data directory, say).
 */
export class LocalReviewError extends CountersignError {
  override name = "LocalReviewError";
  readonly code: string;
  readonly exitCode: number | null;
  readonly stderr: string;

  constructor(message: string, code: string, exitCode: number | null, stderr: string) {
    super(message);
    this.code = code;
    this.exitCode = exitCode;
    this.stderr = stderr;
  }
}

/**
 * Approves the request ref (its id, key, or a key prefix) as a local
 * reviewer of the local serve, and resolves with the line the command
 * printed (what was recorded). A refusal rejects with LocalReviewError.
 */
export function approve(ref: string, options: LocalReviewOptions = {}): Promise<string> {
  return run("approve", ref, [], options);
}

/** Rejects the request ref as approve approves one, with options.reason told to the agent. */
export function reject(ref: string, options: RejectOptions = {}): Promise<string> {
  return run("reject", ref, options.reason === undefined ? [] : ["--reason", options.reason], options);
}

/**
 * Approves the request ref with its effect replaced by `effect` (the whole
 * edited effect), as a reviewer editing it in the console would, with
 * `countersign edit`: the edit becomes a new request with its own key, and
 * the original settles as edited. Otherwise as approve.
 */
export function edit(ref: string, effect: Record<string, unknown>, options: LocalReviewOptions = {}): Promise<string> {
  return run("edit", ref, ["--effect", JSON.stringify(effect)], options);
}

function run(verb: "approve" | "reject" | "edit", ref: string, extra: string[], options: LocalReviewOptions): Promise<string> {
  const env: Record<string, string | undefined> = { ...(options.env ?? process.env) };
  if (options.dataDir !== undefined) env.COUNTERSIGN_DATA_DIR = options.dataDir;
  if (options.config !== undefined) env.COUNTERSIGN_CONFIG = options.config;
  const binary = options.binary ?? (env.COUNTERSIGN_BIN || "countersign");
  const args = [verb, ...(options.as === undefined ? [] : ["--as", options.as]), ...extra, "--", ref];
  return new Promise((resolve, reject) => {
    execFile(binary, args, { env, timeout: options.timeout ?? 60_000, encoding: "utf8" }, (error, stdout, stderr) => {
      if (error === null) {
        resolve(stdout.trim());
        return;
      }
      const exitCode = typeof error.code === "number" ? error.code : null;
      if (exitCode === null) {
        reject(new LocalReviewError(`countersign ${verb}: could not run ${binary}: ${error.message}`, "", null, stderr));
        return;
      }
      // "countersign approve: already_decided: The request …"
      const said = stderr.trim().replace(new RegExp(`^countersign ${verb}: `), "");
      const code = /^([a-z][a-z_]*): /.exec(said)?.[1] ?? "";
      reject(new LocalReviewError(`countersign ${verb} ${ref}: ${said}`, code, exitCode, stderr));
    });
  });
}
