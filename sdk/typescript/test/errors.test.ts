import assert from "node:assert/strict";
import { test } from "node:test";

import * as countersign from "@countersign/client";
import { APIError, ERRORS, InvalidEffectError, UnavailableError } from "@countersign/client";
import { errorFrom, parseRetryAfter } from "../src/errors.js";
import { load } from "./shared.js";

const headers = (values: Record<string, string> = {}) => new Headers(values);

test("every error code of the OpenAPI document has its class, exported", () => {
  const codes: string[] = load("hook/openapi.json").components.schemas.ErrorCode.enum;
  assert.deepEqual(Object.keys(ERRORS).sort(), [...codes].sort());
  for (const code of codes) {
    const cls = ERRORS[code]!;
    assert.equal(cls.code, code);
    assert.equal((countersign as Record<string, unknown>)[cls.name], cls, `${cls.name} is not exported`);
    const e = errorFrom(400, headers(), JSON.stringify({ error: { code, message: "m", request_id: "r" } }));
    assert.ok(e instanceof cls && e instanceof APIError && e instanceof Error, code);
    assert.equal(e.name, cls.name);
  }
});

test("the envelope is read whole", () => {
  const body = {
    error: {
      code: "invalid_effect", message: "amount_cents: minimum 1", field: "/effect/amount_cents",
      errors: [
        { field: "/effect/amount_cents", message: "minimum 1" },
        { field: "/effect/currency", message: "not one of USD, EUR" },
      ],
      request_id: "req_3f9a0c1d2e4b5a6978877665",
    },
  };
  const e = errorFrom(422, headers({ "Request-Id": "req_other" }), JSON.stringify(body));
  assert.ok(e instanceof InvalidEffectError);
  assert.equal(e.status, 422);
  assert.equal(e.field, "/effect/amount_cents");
  assert.equal(e.requestId, "req_3f9a0c1d2e4b5a6978877665");
  assert.equal(e.detail, "amount_cents: minimum 1");
  assert.deepEqual(e.errors[1], { field: "/effect/currency", message: "not one of USD, EUR" });
  assert.equal(
    e.message,
    "countersign: invalid_effect (422) at /effect/amount_cents: amount_cents: minimum 1 (request req_3f9a0c1d2e4b5a6978877665)",
  );
});

test("an unknown code is an APIError, and a page without the envelope too", () => {
  const e = errorFrom(418, headers({ "Request-Id": "req_x" }), '{"error": {"code": "teapot", "message": "short"}}');
  assert.equal(e.constructor, APIError);
  assert.equal(e.code, "teapot");
  assert.equal(e.requestId, "req_x");
  const page = errorFrom(502, headers(), "<html>bad gateway</html>");
  assert.equal(page.constructor, APIError);
  assert.equal(page.message, "countersign: HTTP 502 (502): HTTP 502");
});

test("Retry-After in seconds or as a date", () => {
  const e = errorFrom(503, headers({ "Retry-After": "7" }), "<html>busy</html>");
  assert.ok(e instanceof UnavailableError);
  assert.equal(e.retryAfter, 7);
  const now = Date.parse("2026-01-02T03:04:05Z");
  assert.equal(parseRetryAfter("Fri, 02 Jan 2026 03:06:05 GMT", now), 120);
  assert.equal(parseRetryAfter("soon", now), undefined);
});
