// The outcome journal of gated functions: what a function's call came to,
// kept on disk from the moment it returns until countersign has recorded
// it, so a process killed in between reports it when it runs again rather
// than calling the function a second time.
//
// One file per key, written whole or not at all (a temporary file, fsync,
// rename, fsync of the directory), and removed once countersign holds the
// outcome. node:fs is imported when first needed, so the package still
// loads where there is no file system; only gated functions need one.

import type { OutcomeParams } from "./calls.js";

/** One recorded outcome, as the journal keeps it. */
export interface JournalEntry {
  /** The request's idempotency key. */
  key: string;
  /** The request's id, so an entry never reports to another server's request under the same key. */
  request: string;
  status: OutcomeParams["status"];
  providerRef: string;
  detail: string;
}

/** The journal directory a gated function uses unless given one: .countersign-outcomes in the working directory. */
export const DEFAULT_JOURNAL_DIR = ".countersign-outcomes";

type FS = typeof import("node:fs/promises");

let fsModule: Promise<FS> | undefined;
function fs(): Promise<FS> {
  fsModule ??= import("node:fs/promises");
  return fsModule;
}

export class Journal {
  constructor(readonly dir: string) {}

  private file(key: string): string {
    // A client key may hold "/" and ":"; encoded, every key is one file name.
    return `${this.dir}/${encodeURIComponent(key)}.json`;
  }

  /** The entry for key, or undefined when there is none (or it cannot be read as one). */
  async read(key: string): Promise<JournalEntry | undefined> {
    const { readFile } = await fs();
    let text: string;
    try {
      text = await readFile(this.file(key), "utf8");
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw e;
    }
    const d = JSON.parse(text) as Partial<JournalEntry>;
    if (d.key !== key || typeof d.request !== "string" || (d.status !== "succeeded" && d.status !== "failed")) {
      throw new Error(`the outcome journal's ${this.file(key)} is not an entry for ${key}`);
    }
    return { key, request: d.request, status: d.status, providerRef: String(d.providerRef ?? ""), detail: String(d.detail ?? "") };
  }

  /** Writes entry durably: once this resolves, a crash leaves the whole entry or, had it not resolved, the earlier state. */
  async write(entry: JournalEntry): Promise<void> {
    const { mkdir, open, rename, rm } = await fs();
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const target = this.file(entry.key);
    const temp = `${this.dir}/.${encodeURIComponent(entry.key)}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    const file = await open(temp, "wx", 0o600);
    try {
      await file.writeFile(JSON.stringify(entry) + "\n", "utf8");
      await file.sync();
    } catch (e) {
      await file.close();
      await rm(temp, { force: true });
      throw e;
    }
    await file.close();
    await rename(temp, target);
    await this.syncDir();
  }

  /** Removes key's entry, if any. */
  async remove(key: string): Promise<void> {
    const { rm } = await fs();
    await rm(this.file(key), { force: true });
  }

  // syncDir makes a rename in the directory durable: the entry's name is
  // the directory's data.
  private async syncDir(): Promise<void> {
    const { open } = await fs();
    let dir;
    try {
      dir = await open(this.dir, "r");
    } catch {
      return; // a platform that cannot open a directory (Windows) syncs it with the file
    }
    try {
      await dir.sync();
    } catch {
      // Some file systems refuse fsync on a directory; the rename is as durable as they make it.
    } finally {
      await dir.close();
    }
  }
}
