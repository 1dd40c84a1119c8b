// JSON as countersign reads it: RFC 8785 (JCS) for the key, and the number
// rules. The body this package sends (`dumps`) and the canonical bytes the
// key is computed from (`canonical`) come from one writer, so the key
// computed offline is the key the server derives from that body.
//
// How numbers are written:
// - a `number` is sent as JavaScript writes it (String(n), which is also the
//   form RFC 8785 writes) and checked as the server checks that literal: an
//   integer is a plain integer literal, refused beyond ±2^53 (1e20 is
//   refused, as the server refuses "100000000000000000000"; from 1e21 on
//   JavaScript writes an exponent, which is accepted); NaN and the
//   infinities are refused;
// - a `bigint` is an integer literal, refused beyond ±2^53;
// - a `JsonNumber` is sent exactly as written and checked as the server
//   checks that literal.

import { JsonNumber } from "./json-number.js";

const MAX_SAFE_INTEGER = 2n ** 53n;

type Reason = "beyond" | "range" | "nan" | "inexact";

/**
 * A number countersign refuses: RFC 8785 would write it as another value,
 * or none. `pointer` is where it is, as a JSON Pointer (RFC 6901) into the
 * intent (`/effect/lines/1/amount`), the same the server's 422 names.
 */
export class NumberError extends RangeError {
  override name = "NumberError";
  readonly pointer: string;
  readonly literal: string;
  /** What RFC 8785 writes for an inexact number; "" otherwise. */
  readonly canonical: string;

  constructor(pointer: string, literal: string, reason: Reason, canonical = "") {
    const at = pointer || "the top level";
    const shown = literal.length <= 40 ? literal : `${literal.slice(0, 32)}… (${literal.length} characters)`;
    let text: string;
    switch (reason) {
      case "beyond":
        text = `the integer ${shown} at ${at} is beyond ±2^53, where integers are not all exact; send it as a string`;
        break;
      case "range":
        text = `the number ${shown} at ${at} is out of range; send it as a string`;
        break;
      case "nan":
        text = `the number ${shown} at ${at} is not a JSON number; send it as a string`;
        break;
      case "inexact":
        text = `the number ${shown} at ${at} is not exact: RFC 8785 writes it as ${canonical}; send it as a string`;
        break;
    }
    super(text);
    this.pointer = pointer;
    this.literal = literal;
    this.canonical = canonical;
  }
}

/**
 * Returns the RFC 8785 form of value, refusing what countersign refuses:
 * a NumberError for a number, a TypeError for a value JSON cannot hold and
 * for a string that is not Unicode text (a lone surrogate), each naming
 * the value's JSON Pointer.
 */
export function canonical(value: unknown, pointer = ""): string {
  return write(value, pointer, true);
}

/**
 * Returns value as the JSON this package sends: numbers as described above,
 * members in the order given, no whitespace. A member whose value is
 * undefined is left out, as JSON.stringify leaves it out.
 */
export function dumps(value: unknown): string {
  return write(value, "", false);
}

/**
 * Returns the RFC 8785 form of a JSON number literal, or throws NumberError
 * when it would denote another value than the literal: the server's rule,
 * an integer literal must lie within ±2^53 and any other must keep its
 * decimal value.
 */
export function checkNumber(literal: string, pointer: string): string {
  if (!/[.eE]/.test(literal)) {
    const n = BigInt(literal);
    if (n > MAX_SAFE_INTEGER || n < -MAX_SAFE_INTEGER) throw new NumberError(pointer, literal, "beyond");
    return n.toString(); // -0 is 0
  }
  const f = Number(literal); // correctly rounded; an overflow is Infinity, an underflow 0
  if (!Number.isFinite(f)) throw new NumberError(pointer, literal, "range");
  const written = String(f); // ECMAScript's Number::toString, which RFC 8785 adopts; -0 is "0"
  if (written !== literal && !sameDecimal(literal, written)) throw new NumberError(pointer, literal, "inexact", written);
  return written;
}

interface Decimal {
  negative: boolean;
  digits: string; // no leading or trailing zeros; "" for zero
  exponent: bigint; // the value is digits × 10^exponent
}

function parseDecimal(literal: string): Decimal {
  const m = /^(-?)([0-9]+)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/.exec(literal);
  if (m === null) throw new SyntaxError(`not a JSON number: ${literal}`);
  const [, sign, integer = "", fraction = "", exp = "0"] = m;
  let digits = (integer + fraction).replace(/^0+/, "");
  let exponent = BigInt(exp) - BigInt(fraction.length);
  const trimmed = digits.replace(/0+$/, "");
  exponent += BigInt(digits.length - trimmed.length);
  digits = trimmed;
  return { negative: sign === "-", digits, exponent };
}

// sameDecimal reports whether two JSON number literals denote the same
// decimal value, exactly, whatever their exponents. -0 is 0.
function sameDecimal(a: string, b: string): boolean {
  const x = parseDecimal(a);
  const y = parseDecimal(b);
  if (x.digits === "" || y.digits === "") return x.digits === y.digits;
  return x.negative === y.negative && x.digits === y.digits && x.exponent === y.exponent;
}

function numberLiteral(value: number | bigint | JsonNumber, pointer: string): string {
  if (typeof value === "number") {
    if (!Number.isFinite(value)) throw new NumberError(pointer, String(value), "nan");
    return String(value);
  }
  if (typeof value === "bigint") return value.toString();
  return value.literal;
}

/** Writes a member name as a JSON Pointer reference token. */
export function escapePointer(name: string): string {
  return name.replace(/~/g, "~0").replace(/\//g, "~1");
}

// With the u flag a surrogate pair is one code point, so this matches only
// a lone surrogate.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

function string(s: string, pointer: string): string {
  if (LONE_SURROGATE.test(s)) {
    throw new TypeError(`the string at ${pointer || "the top level"} holds a lone surrogate, which is not Unicode text`);
  }
  // JSON.stringify escapes exactly as RFC 8785 does: quote, backslash, and
  // control characters (\b \t \n \f \r, else \u00xx); the rest as it is.
  return JSON.stringify(s);
}

function isPlainObject(value: object): value is Record<string, unknown> {
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function describe(value: unknown): string {
  if (value === undefined) return "undefined";
  if (typeof value === "object" && value !== null) return value.constructor?.name ?? "object";
  return typeof value;
}

function write(value: unknown, pointer: string, canonicalForm: boolean): string {
  if (value === null) return "null";
  if (value === true) return "true";
  if (value === false) return "false";
  if (typeof value === "string") return string(value, pointer);
  if (typeof value === "number" || typeof value === "bigint" || value instanceof JsonNumber) {
    const literal = numberLiteral(value, pointer);
    return canonicalForm ? checkNumber(literal, pointer) : literal;
  }
  if (Array.isArray(value)) {
    const items = value.map((item: unknown, i) => {
      if (item === undefined) throw new TypeError(`the value at ${pointer}/${i} is undefined, which JSON cannot hold`);
      return write(item, `${pointer}/${i}`, canonicalForm);
    });
    return "[" + items.join(",") + "]";
  }
  if (typeof value === "object" && isPlainObject(value)) {
    // Written in the order given, so a refusal names the first value at
    // fault in the body as sent, as the server does; sorted after.
    const members: [string, string][] = [];
    for (const name of Object.keys(value)) {
      const member = value[name];
      if (member === undefined) continue;
      const child = pointer + "/" + escapePointer(name);
      members.push([name, string(name, child) + ":" + write(member, child, canonicalForm)]);
    }
    // RFC 8785 orders members by their names' UTF-16 code units, which is
    // how JavaScript compares strings.
    if (canonicalForm) members.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return "{" + members.map(([, m]) => m).join(",") + "}";
  }
  throw new TypeError(`the value at ${pointer || "the top level"} is a ${describe(value)}, which JSON cannot hold`);
}
