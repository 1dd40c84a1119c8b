import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { InvalidKeyError, JsonNumber, NumberError, canonical, checkClientKey, intentKey, parseJSON } from "@countersign/client";
import { dumps } from "../src/canonical.js";
import { sha256Hex } from "../src/sha256.js";
import { loadExact } from "./shared.js";

const PUBLISHED = "wa_d0290121a1bc5140c2f0e0dcb82f8a07d785742f014cc81ac67938ef379d634c";
const EFFECT = { invoice: "inv_8841", amount_cents: 4200, currency: "USD" };

function keyOf(intent: any): string {
  return intentKey(intent.run_id, intent.step, intent.tool, intent.effect);
}

describe("the shared key vectors (internal/intentkey/testdata/key-vectors.json)", () => {
  const vectors = loadExact("internal/intentkey/testdata/key-vectors.json");

  test("every key", () => {
    assert.ok(vectors.keys.length >= 20);
    for (const v of vectors.keys) assert.equal(keyOf(v.intent), v.key, v.name);
  });

  test("every refusal, by its pointer", () => {
    assert.ok(vectors.refused.length >= 10);
    for (const v of vectors.refused) {
      assert.throws(
        () => keyOf(v.intent),
        (e: unknown) => e instanceof NumberError && e.pointer === v.pointer && e.message.includes(` at ${v.pointer} `),
        v.name,
      );
    }
  });
});

describe("the shared client keys (internal/intentkey/testdata/key-vectors.json)", () => {
  const vectors = loadExact("internal/intentkey/testdata/key-vectors.json").client_keys;

  test("are sent with the published intent", () => {
    assert.equal(vectors.derived, PUBLISHED);
    assert.equal(intentKey("r-7f3a", 6, "billing.credit", EFFECT), vectors.derived);
  });

  test("every accepted key", () => {
    assert.ok(vectors.accepted.length >= 10);
    for (const v of vectors.accepted) assert.doesNotThrow(() => checkClientKey(v.key, vectors.derived), v.name);
  });

  test("every refused key, naming the Idempotency-Key", () => {
    assert.ok(vectors.refused.length >= 30);
    for (const v of vectors.refused) {
      assert.throws(
        () => checkClientKey(v.key, vectors.derived),
        (e: unknown) => e instanceof InvalidKeyError && e instanceof RangeError && e.message.includes("Idempotency-Key"),
        v.name,
      );
    }
  });

  test("a refusal says why", () => {
    for (const [key, why] of [
      [" " + PUBLISHED, "character 1 (U+0020) is not"], ["abcdefg", "this one has 7"],
      ["WA_" + PUBLISHED.slice(3), "must be the key this intent derives"],
    ] as const) {
      assert.throws(() => checkClientKey(key, PUBLISHED), (e: unknown) => e instanceof InvalidKeyError && e.message.includes(why), key);
    }
    // Without the derived key, only the form.
    assert.doesNotThrow(() => checkClientKey("WA_" + PUBLISHED.slice(3)));
  });
});

describe("numbers", () => {
  const key = (n: unknown) => intentKey("r", 1, "t", { n });

  test("a number keys as RFC 8785 writes it, which is how JavaScript writes it", () => {
    assert.equal(key(1.0), key(1));
    assert.equal(key(-0), key(0));
    assert.equal(key(0.1), key(new JsonNumber("0.1")));
    const written: [number, string][] = [
      [1e21, "1e+21"], [1e-7, "1e-7"], [1e-6, "0.000001"], [2.5e-7, "2.5e-7"], [123.456, "123.456"],
      [5e-324, "5e-324"], [1.7976931348623157e308, "1.7976931348623157e+308"], [-1.5, "-1.5"],
      [0.30000000000000004, "0.30000000000000004"], [2 ** 53, "9007199254740992"],
    ];
    for (const [value, text] of written) assert.equal(canonical(value), text, String(value));
  });

  test("an integer JavaScript writes without an exponent is refused beyond ±2^53, as the server refuses it", () => {
    for (const n of [2 ** 53 + 2, -(2 ** 53) - 2, 1e20]) {
      assert.throws(() => key(n), (e: unknown) => e instanceof NumberError && e.message.includes("beyond ±2^53"));
    }
    assert.throws(() => intentKey("r", 2 ** 53 + 2, "t", {}), (e: unknown) => e instanceof NumberError && e.pointer === "/step");
  });

  test("a bigint is an integer, within ±2^53", () => {
    assert.equal(key(2n ** 53n), key(2 ** 53));
    assert.equal(canonical(-(2n ** 53n)), "-9007199254740992");
    assert.throws(() => key(2n ** 53n + 1n), NumberError);
    assert.throws(() => key(10n ** 30n), NumberError);
  });

  test("NaN and the infinities are refused", () => {
    for (const n of [NaN, Infinity, -Infinity]) {
      assert.throws(() => key(n), (e: unknown) => e instanceof NumberError && e.pointer === "/effect/n");
    }
  });

  test("a JsonNumber is checked as written", () => {
    assert.equal(key(new JsonNumber("1.0")), key(1));
    assert.equal(key(new JsonNumber("1E+2")), key(100));
    assert.equal(key(new JsonNumber("9007199254740994.0")), key(new JsonNumber("9007199254740994.00")));
    assert.throws(() => key(new JsonNumber("9007199254740993.0")), (e: unknown) => e instanceof NumberError && e.canonical === "9007199254740992");
    assert.throws(() => key(new JsonNumber("0." + "1".repeat(5000))), NumberError);
    assert.throws(() => key(new JsonNumber("1e-400")), NumberError);
    assert.throws(() => key(new JsonNumber("1e400")), NumberError);
    assert.throws(() => new JsonNumber("01"), SyntaxError);
    assert.throws(() => new JsonNumber("1."), SyntaxError);
  });

  test("booleans are not numbers", () => {
    assert.equal(canonical({ a: true, b: false, c: null }), '{"a":true,"b":false,"c":null}');
    assert.notEqual(key(true), key(1));
  });
});

describe("the intent", () => {
  test("the published vector, whatever the members' order", () => {
    assert.equal(intentKey("r-7f3a", 6, "billing.credit", EFFECT), PUBLISHED);
    assert.equal(intentKey("r-7f3a", 6, "billing.credit", { currency: "USD", amount_cents: 4200, invoice: "inv_8841" }), PUBLISHED);
  });

  test("an effect of any interface type is taken, and only an object", () => {
    interface Credit {
      invoice: string;
      amount_cents: number;
      currency: "USD" | "EUR";
    }
    const credit: Credit = { invoice: "inv_8841", amount_cents: 4200, currency: "USD" };
    assert.equal(intentKey("r-7f3a", 6, "billing.credit", credit), PUBLISHED);
    for (const effect of [[], null, new JsonNumber("1"), "{}"]) assert.throws(() => intentKey("r", 1, "t", effect as never), TypeError);
  });

  test("a step is an integer or a string, as given", () => {
    assert.notEqual(intentKey("r-7f3a", "6", "billing.credit", EFFECT), PUBLISHED);
    for (const step of [true, 6.5, null, [6]]) assert.throws(() => intentKey("r", step as never, "t", {}), TypeError);
    assert.throws(() => intentKey("r", " ", "t", {}), TypeError);
  });

  test("what JSON cannot hold is refused by its pointer", () => {
    assert.throws(() => intentKey("r", 1, "t", { a: [1, new Map()] }), /\/effect\/a\/1/);
    assert.throws(() => intentKey("r", 1, "t", { a: [undefined] }), /\/effect\/a\/0/);
    assert.throws(() => intentKey("r", 1, "t", { d: new Date() }), TypeError);
    assert.throws(() => intentKey("r", 1, "t", [] as never), TypeError);
    assert.throws(() => intentKey("r", 1, "t", { "a~b": "\ud800" }), /\/effect\/a~0b/);
    assert.throws(() => intentKey("", 1, "t", {}), TypeError);
    assert.throws(() => intentKey("r", 1, " ", {}), TypeError);
  });

  test("an undefined member is left out, of the body and of the key alike", () => {
    assert.equal(intentKey("r-7f3a", 6, "billing.credit", { ...EFFECT, note: undefined }), PUBLISHED);
    assert.equal(dumps({ a: 1, b: undefined }), '{"a":1}');
  });

  test("the body sent writes numbers as they are, members in the order given", () => {
    const body = dumps({ b: 1.5, a: new JsonNumber("9007199254740994.0"), c: 1e21, d: 7, e: "é\n", f: 2n ** 53n });
    assert.equal(body, '{"b":1.5,"a":9007199254740994.0,"c":1e+21,"d":7,"e":"é\\n","f":9007199254740992}');
  });
});

describe("parseJSON", () => {
  test("keeps every number as written and refuses what JSON.parse refuses", () => {
    const v = parseJSON(' {"a": [1.50, -0, 9007199254740993], "__proto__": {"b": "\\u00e9"}} ') as any;
    assert.deepEqual(v.a.map((n: JsonNumber) => n.literal), ["1.50", "-0", "9007199254740993"]);
    assert.equal(Object.getPrototypeOf(v), Object.prototype, "__proto__ is a member, not the prototype");
    assert.equal(v["__proto__"].b, "é");
    for (const bad of ["", "[1,]", '{"a":1,"a":2}', "01", '"\t"', "[1] x", "{'a':1}", "NaN"]) {
      assert.throws(() => parseJSON(bad), SyntaxError, bad);
    }
  });
});

test("sha256 of the standard examples", () => {
  const hex = (s: string) => sha256Hex(new TextEncoder().encode(s));
  assert.equal(hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  assert.equal(hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  assert.equal(hex("a".repeat(1000)), "41edece42d63e8d9bf515a9ba6932e1c20cbc9f5a5d134645adb5db1b9737ea3");
  assert.equal(hex("a".repeat(55)), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
});
