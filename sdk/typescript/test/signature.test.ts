import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, test } from "node:test";

import { DEFAULT_TOLERANCE, SignatureError, verifySignature, type VerifyOptions } from "@countersign/client";
import { load, REPO } from "./shared.js";

const vectors = load("internal/signature/testdata/vectors.json");

// Whether verifySignature accepts, checking v2 (or v1 alone).
async function checks(secret: string | Uint8Array, header: string, c: any, now: number, v2: boolean): Promise<boolean> {
  const options: VerifyOptions = v2
    ? { method: c.method, path: c.path, idempotencyKey: c.idempotency_key, deliveryId: c.delivery, now }
    : { now };
  try {
    await verifySignature(secret, header, new TextEncoder().encode(c.body), options);
    return true;
  } catch (e) {
    if (e instanceof SignatureError) return false;
    throw e;
  }
}

describe("the signature vectors (internal/signature/testdata/vectors.json)", () => {
  test("the tolerance is the default", () => {
    assert.equal(vectors.tolerance_seconds, DEFAULT_TOLERANCE);
  });

  test("every signed example verifies with every secret", async () => {
    assert.ok(vectors.signed.length > 2);
    for (const c of vectors.signed) {
      for (const secret of c.secrets as string[]) {
        assert.ok(await checks(secret, c.header, c, c.t, true), `${c.name}: v2`);
        assert.ok(await checks(secret, c.header, c, c.t, false), `${c.name}: v1`);
        // The secret as bytes is its UTF-8 encoding.
        assert.ok(await checks(new TextEncoder().encode(secret), c.header, c, c.t, true), `${c.name}: bytes`);
      }
    }
  });

  test("every checked example answers as listed", async () => {
    assert.ok(vectors.checked.length > 10);
    for (const c of vectors.checked) {
      assert.equal(await checks(c.secret, c.header, c, c.now, false), c.v1, `${c.name}: v1`);
      assert.equal(await checks(c.secret, c.header, c, c.now, true), c.v2, `${c.name}: v2`);
    }
  });
});

describe("arguments", () => {
  const c = vectors.signed[0];

  test("method and path go together", async () => {
    await assert.rejects(verifySignature("s", c.header, "", { method: "POST" }), TypeError);
  });

  test("a body given as a string is its UTF-8 bytes", async () => {
    await verifySignature(c.secrets[0], c.header, c.body, { method: c.method, path: c.path, idempotencyKey: c.idempotency_key, now: c.t });
  });

  test("a field with a newline matches nothing", async () => {
    await assert.rejects(
      verifySignature(c.secrets[0], c.header, c.body, { method: c.method, path: c.path + "\n", idempotencyKey: c.idempotency_key, now: c.t }),
      SignatureError,
    );
  });

  test("the clock is the default now", async () => {
    // Signed in 2025, far outside the tolerance.
    await assert.rejects(
      verifySignature(c.secrets[0], c.header, c.body, { method: c.method, path: c.path, idempotencyKey: c.idempotency_key }),
      SignatureError,
    );
  });
});

describe("runtimes", () => {
  const c = vectors.signed[0];
  const options = { method: c.method, path: c.path, idempotencyKey: c.idempotency_key, now: c.t };

  test("without a global crypto, as on Node 18, node:crypto's Web Crypto is used", async () => {
    const global = Object.getOwnPropertyDescriptor(globalThis, "crypto");
    Object.defineProperty(globalThis, "crypto", { value: undefined, configurable: true, writable: true });
    try {
      assert.equal(globalThis.crypto, undefined);
      await verifySignature(c.secrets[0], c.header, c.body, options);
      await assert.rejects(verifySignature("another secret", c.header, c.body, options), SignatureError);
    } finally {
      Object.defineProperty(globalThis, "crypto", global!);
    }
  });

  test("the SDK imports no Node module but when it needs one, so it runs at the edge", () => {
    // From index.js, every module reached: Node's modules only by a dynamic
    // import where a feature needs one (Web Crypto on Node 18, the gated
    // functions' journal). The testing helpers and the receipt command line
    // are Node's entry points of their own, never reached from it.
    const dir = join(REPO, "sdk/typescript/dist/src");
    const seen = new Set<string>();
    const outside: string[] = [];
    const visit = (file: string) => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const m of readFileSync(join(dir, file), "utf8").matchAll(/(from |import\()\s*"([^"]+)"/g)) {
        const [, how, spec] = m as unknown as [string, string, string];
        if (spec.startsWith("./")) visit(spec.slice(2));
        else outside.push(`${file}: ${how === "from " ? "import" : "import()"} ${spec}`);
      }
    };
    visit("index.js");
    assert.deepEqual(outside.sort(), ["journal.js: import() node:fs/promises", "receipt.js: import() node:crypto", "signature.js: import() node:crypto"]);
    assert.ok(!seen.has("testing.js") && !seen.has("receipt-cli.js"), [...seen].join(", "));
  });
});
