// JSON numbers kept exactly as written, for the values a JavaScript number
// cannot hold: integers past 2^53 and decimals with more digits than a double.

const NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;

/**
 * A JSON number literal, sent exactly as written and checked as the server
 * checks it: `new JsonNumber("9007199254740994.0")` is accepted (RFC 8785
 * writes the same value), `new JsonNumber("9007199254740993")` is refused.
 * Use it for a decimal read from elsewhere as text; `parseJSON` returns
 * one for every number of a JSON text.
 */
export class JsonNumber {
  readonly literal: string;

  constructor(literal: string) {
    if (!NUMBER.test(literal)) {
      throw new SyntaxError(`not a JSON number: ${JSON.stringify(literal)}`);
    }
    this.literal = literal;
  }

  toString(): string {
    return this.literal;
  }

  toJSON(): string {
    // JSON.stringify cannot write a bare literal; the SDK's own writer
    // does. A string keeps the digits should anything else serialise it.
    return this.literal;
  }
}

/**
 * Parses a JSON text as JSON.parse does, except that every number is a
 * JsonNumber holding its literal, so nothing is rounded on the way in and
 * the key computed from the value is the key the server derives from the
 * text. A member name given twice is refused, as the server refuses it.
 */
export function parseJSON(text: string): unknown {
  const parser = new Parser(text);
  parser.space();
  const value = parser.value();
  parser.space();
  if (parser.at < text.length) parser.fail("text after the value");
  return value;
}

class Parser {
  at = 0;
  constructor(private readonly text: string) {}

  fail(what: string): never {
    throw new SyntaxError(`JSON: ${what} at offset ${this.at}`);
  }

  space(): void {
    while (this.at < this.text.length && " \t\n\r".includes(this.text[this.at]!)) this.at++;
  }

  value(): unknown {
    const c = this.text[this.at];
    if (c === "{") return this.object();
    if (c === "[") return this.array();
    if (c === '"') return this.string();
    for (const [word, value] of [["true", true], ["false", false], ["null", null]] as const) {
      if (this.text.startsWith(word, this.at)) {
        this.at += word.length;
        return value;
      }
    }
    const m = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
    m.lastIndex = this.at;
    const found = m.exec(this.text);
    if (found === null || found[0] === "" || found[0] === "-") this.fail("no JSON value");
    this.at += found[0].length;
    return new JsonNumber(found[0]);
  }

  object(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.at++;
    this.space();
    if (this.text[this.at] === "}") {
      this.at++;
      return out;
    }
    for (;;) {
      this.space();
      if (this.text[this.at] !== '"') this.fail("no member name");
      const name = this.string();
      if (Object.prototype.hasOwnProperty.call(out, name)) this.fail(`the member ${JSON.stringify(name)} twice`);
      this.space();
      if (this.text[this.at] !== ":") this.fail("no colon");
      this.at++;
      this.space();
      Object.defineProperty(out, name, { value: this.value(), enumerable: true, writable: true, configurable: true });
      this.space();
      const c = this.text[this.at++];
      if (c === "}") return out;
      if (c !== ",") this.fail("no comma or brace");
    }
  }

  array(): unknown[] {
    const out: unknown[] = [];
    this.at++;
    this.space();
    if (this.text[this.at] === "]") {
      this.at++;
      return out;
    }
    for (;;) {
      this.space();
      out.push(this.value());
      this.space();
      const c = this.text[this.at++];
      if (c === "]") return out;
      if (c !== ",") this.fail("no comma or bracket");
    }
  }

  string(): string {
    // JSON's strings are JavaScript's string literals but for a few escapes;
    // the span is found here and decoded by JSON.parse.
    const m = /"(?:[^"\\\u0000-\u001f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"/y;
    m.lastIndex = this.at;
    const found = m.exec(this.text);
    if (found === null) this.fail("a malformed string");
    this.at += found[0].length;
    return JSON.parse(found[0]) as string;
  }
}
