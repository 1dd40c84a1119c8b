// What several tests read: the repository's shared files.

import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { parseJSON } from "@countersign/client";

/** The repository's root (this file runs as sdk/typescript/dist/test/shared.js). */
export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "../../../..");

/** Reads a repository file with its numbers kept as written (JsonNumber), so nothing is rounded on the way in. */
export function loadExact(relative: string): any {
  return parseJSON(readFileSync(resolve(REPO, relative), "utf8"));
}

/** Reads a repository file as JSON.parse does. */
export function load(relative: string): any {
  return JSON.parse(readFileSync(resolve(REPO, relative), "utf8"));
}
