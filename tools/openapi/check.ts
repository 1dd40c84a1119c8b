// A small agent written against the types openapi-typescript generates from
// hook/openapi.json: it compiles only if the free-form objects (effect,
// effect_schema, tiers) are usable and the error envelope is what the
// document says. hook's TestOpenAPITypeScriptTypesCompile runs it.
import type { components, paths } from "./generated/api";

type Intent = components["schemas"]["Intent"];
type Request = components["schemas"]["Request"];
type Tool = components["schemas"]["Tool"];
type ErrorBody = components["schemas"]["Error"];
type ListedTools = paths["/v1/tools"]["get"]["responses"][200]["content"]["application/json"];

export const intent: Intent = {
  run_id: "r-7f3a",
  step: 6,
  tool: "billing.credit",
  effect: { invoice: "inv_8841", amount_cents: 4200, currency: "USD", lines: [{ sku: "a", qty: 2 }] },
  summary: "Credit 42.00 USD to inv_8841",
};

export function amount(r: Request): unknown {
  return r.effect["amount_cents"];
}

export function schemaOf(tools: ListedTools, name: string): Tool["effect_schema"] {
  const schema: Tool["effect_schema"] = tools.tools.find((t) => t.name === name)?.effect_schema ?? { type: "object" };
  return schema;
}

export function firstTier(p: Tool["policy"]): unknown {
  return p?.tiers?.[0]?.["when"];
}

export function explain(e: ErrorBody): string {
  const where = e.error.field ?? "";
  const all = (e.error.errors ?? []).map((v) => `${v.field}: ${v.message}`).join("; ");
  return `${e.error.code} at ${where} (${e.error.request_id}): ${e.error.message} ${all}`;
}
