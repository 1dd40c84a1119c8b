// Package mcpserver serves countersign's agent API as Model Context Protocol
// tools, so an agent runtime that calls tools through MCP asks for a write,
// waits for the human decision and reads the outcome without hand-written
// HTTP. It is a client of a countersign server (the Go client, package
// client) and never touches a database: `countersign mcp` runs it over stdio
// against COUNTERSIGN_URL, and `serve` mounts it at /mcp over streamable
// HTTP for the agent whose bearer token each request carries.
//
// The tools, listed once when the server is built (the agent's tools as GET
// /v1/tools lists them at that moment):
//
//	list_tools          the tools the agent may request, with their policies and effect schemas
//	request_write       ask for a write: the body of POST /v1/requests as it is
//	request_<tool>      one per tool with an effect_schema (dots and other characters
//	                    outside [A-Za-z0-9_-] become underscores): the same body without
//	                    "tool", its "effect" described by the tool's bundled schema
//	get_request         a request as it stands now
//	list_requests       the agent's requests, newest first, a page at a time
//	wait_for_outcome    long-poll until the request is settled or the wait ends, with
//	                    progress notifications while it waits when the client sent a token
//	cancel_request      withdraw a request still pending
//
// A typed tool's input schema is
//
//	{"type": "object", "required": ["run_id", "step", "effect"], "additionalProperties": false,
//	 "properties": {"run_id": …, "step": …, "effect": <the bundled effect schema>,
//	                "summary": …, "reason": …, "requested_for": …, "idempotency_key": …}}
//
// so what a model sends is the API's body without the tool's name, and the
// JSON pointers of a refusal (/effect/amount_cents) name the argument at
// fault as they are. The effect schema is nested as GET /v1/tools returns
// it, without its "$schema" and "$id" (the wrapper carries the dialect), and
// with each local "$ref" (#/$defs/…) rewritten to stay inside it
// (#/properties/effect/$defs/…).
//
// Every result carries structured content, the request as GET
// /v1/requests/{ref} represents it (list_requests: {"requests", "next_cursor"};
// list_tools: {"tools"}), and one sentence a model can read ("request wa_…:
// approved by U024BE7LH, executed: obj_1"). A refusal is a tool error
// (isError) whose structured content is the API's error envelope, its code
// the stable one; a countersign that does not answer within the call's time
// is a tool error with the code "unreachable", and the server stays up for
// the next call. A write's key is derived from its run, step, tool and
// effect, so a model that retries request_write with the same arguments
// lands on the same request. A write the tool's policy denies is a tool
// error (denied_by_policy) naming the rule and saying that the same fields
// always get it, and only a different write or a change of policy can go
// further; one it allows reads "approved by policy rule "small" (no review
// needed)".
package mcpserver
