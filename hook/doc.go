// Package hook is the agent-facing HTTP API: POST /v1/requests, GET and
// long-poll /v1/requests/{ref}, the list GET /v1/requests (pages by an
// opaque keyset cursor, cursor.go), cancel, redrive, GET /v1/tools and the
// OpenAPI 3.1 document that describes them all (GET /v1/openapi.json,
// openapi.json beside this file).
//
// It authenticates agents by the sha256 of their bearer tokens (Agents),
// reads the body within approvals.MaxBodyBytes, and hands the intent to
// approvals.Service, which owns intake, keys and decisions. It represents a
// request as a wire.Request, which is also the body of a callback
// (CallbackBody), and answers every refusal with approvals' code and
// words, its HTTP status (Status) and, for a database out of reach,
// Retry-After.
//
// A long-poll that must wait on an HTTP/1.x connection parks it
// (parking.go, parked_poll.go): the connection is taken from the HTTP
// server and waits as a timer and a notifier callback, with no goroutine,
// until a change, its deadline or shutdown; its answer closes the
// connection. Other long-polls wait on their goroutine (waitForChange).
//
// POST /v1/hooks/pretooluse and posttooluse answer a coding agent's
// permission hooks (pretooluse.go, docs/HOOKS.md): Claude Code's tool call
// is an intent on the execute: agent tool it maps to, answered allow, deny
// or ask from the policy and the approvers' decision.
//
// hook/apitest holds the handlers to the OpenAPI document in tests.
package hook
