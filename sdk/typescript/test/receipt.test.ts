// The receipt verifier against receipt/testdata/vectors.json, the receipts
// the Go signer signs and what every verifier must answer for each write;
// and the command line verifier on the same vectors.

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, test } from "node:test";

import {
  CountersignError, effectDigest, fetchVerifier, RECEIPT_ERRORS, ReceiptEffectError, ReceiptError, ReceiptExpiredError, ReceiptMalformedError,
  ReceiptMissingError, ReceiptVerifier,
} from "@countersign/client";
import { load } from "./shared.js";

interface Checked {
  name: string;
  receipt: string;
  now: number;
  idempotency_key: string;
  tool: string;
  body: string;
  error: string;
}

const vectors = load("receipt/testdata/vectors.json") as {
  jwks: { keys: Record<string, string>[] };
  signed: { name: string; claims: Record<string, unknown>; receipt: string }[];
  checked: Checked[];
};

const CLI = resolve(dirname(fileURLToPath(import.meta.url)), "../src/receipt-cli.js");
const scratch = mkdtempSync(join(tmpdir(), "countersign-receipt-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

describe("receipt vectors", () => {
  test("the vectors hold every refusal and an acceptance", () => {
    assert.equal(vectors.checked.length, 11);
    const errors = new Set(vectors.checked.map((c) => c.error));
    assert.deepEqual([...errors].sort(), ["", ...Object.keys(RECEIPT_ERRORS)].sort());
  });

  for (const c of vectors.checked) {
    test(c.name, async () => {
      const verifier = new ReceiptVerifier(JSON.stringify(vectors.jwks), { now: c.now });
      const got = verifier.verify(c.receipt, { key: c.idempotency_key, tool: c.tool, body: c.body });
      if (c.error === "") {
        const claims = await got;
        const signed = vectors.signed.find((s) => s.receipt === c.receipt);
        assert.ok(signed, "an accepted receipt is one of the signed vectors");
        assert.deepEqual(claims, signed.claims);
        return;
      }
      await assert.rejects(got, (e: unknown) => {
        assert.ok(e instanceof ReceiptError, String(e));
        assert.equal(e.code, c.error);
        assert.ok(e instanceof RECEIPT_ERRORS[c.error]!, `${e.name} is not the class of ${c.error}`);
        return true;
      });
    });
  }

  test("the signed vectors verify with their claims, in bytes and as the parsed JWKS", async () => {
    const verifier = new ReceiptVerifier(new TextEncoder().encode(JSON.stringify(vectors.jwks)), { now: 1760000060 });
    assert.deepEqual(verifier.kids, vectors.jwks.keys.map((k) => k.kid));
    for (const s of vectors.signed) {
      assert.deepEqual(await verifier.parse(s.receipt), s.claims, s.name);
      assert.deepEqual(await new ReceiptVerifier(vectors.jwks, { now: () => 1760000060 }).parse(s.receipt), s.claims, s.name);
    }
  });

  test("leeway takes a receipt past its expiry by that much, not more", async () => {
    const s = vectors.signed[0]!;
    const exp = Number(s.claims.exp);
    assert.deepEqual(await new ReceiptVerifier(vectors.jwks, { now: exp + 29, leeway: 30 }).parse(s.receipt), s.claims);
    await assert.rejects(new ReceiptVerifier(vectors.jwks, { now: exp + 30, leeway: 30 }).parse(s.receipt), (e: unknown) => {
      assert.ok(e instanceof ReceiptExpiredError);
      assert.equal(e.claims?.key, s.claims.key, "the refusal carries the claims");
      return true;
    });
  });

  test("a header that is not countersign's, or base64 with padding, is malformed; a body that is not JSON is not the effect", async () => {
    const verifier = new ReceiptVerifier(vectors.jwks, { now: 1760000060 });
    const [head, payload, sig] = vectors.signed[0]!.receipt.split(".") as [string, string, string];
    const b64 = (o: unknown) => Buffer.from(JSON.stringify(o)).toString("base64url");
    const kid = vectors.jwks.keys[0]!.kid;
    for (const token of [
      `${b64({ alg: "none", kid, typ: "countersign-receipt+jwt" })}.${payload}.${sig}`,
      `${b64({ alg: "EdDSA", kid, typ: "JWT" })}.${payload}.${sig}`,
      `${head}.${payload}.${sig}=`,
      `${head}.${payload}`,
      `${head}.${payload}.${sig}.x`,
    ]) {
      await assert.rejects(verifier.parse(token), ReceiptMalformedError, token);
    }
    const body = { key: "", tool: "", body: "{\"amount_cents\":" };
    await assert.rejects(verifier.verify(vectors.signed[0]!.receipt, body), ReceiptEffectError);
    await assert.rejects(verifier.verifyRequest({}, "{}", "billing.credit"), ReceiptMissingError);
  });

  test("verifyRequest reads Countersign-Receipt and Idempotency-Key from Fetch's Headers and Node's", async () => {
    const ok = vectors.checked.find((c) => c.error === "")!;
    const verifier = new ReceiptVerifier(vectors.jwks, { now: ok.now });
    const fetchHeaders = new Headers({ "Countersign-Receipt": ok.receipt, "Idempotency-Key": ok.idempotency_key });
    assert.equal((await verifier.verifyRequest(fetchHeaders, ok.body, ok.tool)).key, ok.idempotency_key);
    const nodeHeaders = { "countersign-receipt": ` ${ok.receipt} `, "idempotency-key": "wa_" + "0".repeat(64) };
    await assert.rejects(verifier.verifyRequest(nodeHeaders, ok.body, ok.tool), (e: unknown) => e instanceof ReceiptError && e.code === "other_key");
  });

  test("effectDigest is the digest of the RFC 8785 form", () => {
    const ok = vectors.checked.find((c) => c.error === "")!;
    const claims = vectors.signed[0]!.claims;
    assert.equal(effectDigest(ok.body), claims.effect_sha256);
    assert.equal(effectDigest(new TextEncoder().encode('{ "invoice": "inv_8841", "currency": "USD", "amount_cents": 4200.0 }')), claims.effect_sha256);
  });

  test("a JWKS without an Ed25519 key, or with a short one, is refused", async () => {
    assert.throws(() => new ReceiptVerifier({ keys: [{ kty: "RSA", n: "x", e: "AQAB" }] }), CountersignError);
    assert.throws(() => new ReceiptVerifier({ keys: [{ kty: "OKP", crv: "Ed25519", kid: "k", x: "AAAA" }] }), /x is not an Ed25519 public key/);
    assert.throws(() => new ReceiptVerifier("not json"), CountersignError);
    await assert.rejects(fetchVerifier("http://127.0.0.1:1/.well-known/jwks.json"), CountersignError);
  });
});

function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { encoding: "utf8" }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : -1, stdout, stderr });
    });
  });
}

describe("countersign-receipt verify", () => {
  const jwks = join(scratch, "jwks.json");
  writeFileSync(jwks, JSON.stringify(vectors.jwks));
  // One process each, so a few: an acceptance and two refusals (every
  // refusal's code is the verifier's, tested above).
  const some = vectors.checked.filter((c) => ["", "missing", "effect"].includes(c.error) && !c.name.includes("older") && !c.name.includes("order"));
  some.forEach((c, i) => {
    test(`${c.name}: ${c.error || "accepted"}`, async () => {
      const body = join(scratch, `body-${i}.json`);
      writeFileSync(body, c.body);
      const got = await cli(["verify", "--jwks", jwks, "--key", c.idempotency_key, "--tool", c.tool, "--body", body, "--now", String(c.now), c.receipt]);
      if (c.error === "") {
        assert.equal(got.code, 0, got.stderr);
        assert.deepEqual(JSON.parse(got.stdout), vectors.signed.find((s) => s.receipt === c.receipt)!.claims);
      } else {
        assert.deepEqual([got.code, got.stderr.trim(), got.stdout], [1, c.error, ""]);
      }
    });
  });

  test("a usage error exits 2", async () => {
    const got = await cli(["verify", "--jwks", jwks, "x"]);
    assert.equal(got.code, 2);
    assert.match(got.stderr, /--jwks and --body are required/);
  });
});
