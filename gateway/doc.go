// Package gateway is countersign as an MCP client: it keeps a session with
// each configured upstream MCP server (a command over stdio, or a URL over
// streamable HTTP), lists its tools, and calls them, for a read that passes
// straight through (Call) and for an approved write (Sender).
//
// # Tools
//
// An upstream's tool is exposed as "<upstream>__<tool>" (Separator), at most
// 64 characters; a longer one, or one whose name is not made of the
// protocol's characters, is left out and logged. Tools lists the tools of the
// upstreams connected now; an upstream that sends tools/list_changed is listed
// again, and OnChange tells whoever re-exposes the tools (the MCP server)
// after every change of the list: an upstream connected, went down, or was
// listed again. A tool is a Read (it passes through, never stored) when the
// configuration lists it in Reads, or when a Trusted upstream declares
// readOnlyHint true; it is Idempotent (a call lost after it went out may be
// sent again) when listed in Idempotent, or when a Trusted upstream declares
// idempotentHint true. An untrusted upstream's annotations are kept, for a
// card to show, and believed for nothing.
//
// # Connections
//
// Each upstream has a loop: connect (15 s for the handshake and the first
// listing), serve the session until it ends, and connect again; a failed
// connection is retried after 250 ms, doubling to 30 s, and so is a session
// that ended within 5 s of its start. While an upstream is down its tools are
// not listed, Call answers a *DownError and the Sender OutcomeRetry with
// upstream_down; countersign stays up. A command is started with the
// process's environment plus Env, its standard error logged at debug, and
// ended by closing its standard input, then SIGTERM, then SIGKILL, 2 s apart
// (on Stop, or when its session is dropped). An HTTP upstream's Headers are
// set on every request. No header value, environment value or password of
// a URL reaches a log line, a Health's LastError or an error's text: they
// are replaced by "[redacted]" wherever an error quotes them.
//
// The client offers no roots (the filesystem server would take roots for
// its allowed directories) and no sampling or elicitation. The Go SDK
// (github.com/modelcontextprotocol/go-sdk v1.8.0) first tries the 2026-07-28
// revision's server/discover (tools/list_changed then comes through
// subscriptions/listen) and falls back to initialize with 2025-11-25: the
// reference servers on npm (TypeScript SDK 1.32.2) and the Go SDK's own
// server behind its stateful streamable HTTP handler negotiate 2025-11-25,
// the Go SDK's server over stdio 2026-07-28. The tests cover both.
//
// # The sender
//
// Sender performs an approved write: sender.Write.Tool is the exposed name,
// Write.Body the arguments (a JSON object), and Write.Key, the write's
// idempotency key, goes in the call's _meta under
// "countersign/idempotency_key" (MetaIdempotencyKey; the request's id under
// "countersign/request_id") so that an upstream that reads it can drop a
// second call of the same write. It makes one tools/call, bounded by the
// upstream's CallTimeout (60 s when unset) and the executor's context, and
// never sends twice. Its classification:
//
//	result, isError false            succeeded   Body: {content, structuredContent, isError}
//	result, isError true             fatal       tool_error: the first text, cut to 500 bytes
//	JSON-RPC error answer            fatal       rpc_error: the error's message
//	arguments not a JSON object      fatal       invalid_arguments (nothing sent)
//	no upstream by that name         fatal       unknown_upstream
//	down when the send began,        retry       upstream_down (nothing sent)
//	  or an HTTP request never written
//	connection lost after the call   review      connection_lost; retry for an Idempotent tool
//	  went out (the process exited)
//	no answer within the timeout     review      call_timeout; retry (connection_lost) for an Idempotent tool
//
// Outcome maps connection_lost and call_timeout to review, whatever the
// attempt was: the executor takes a code whose outcome is retry for proof
// that the write was not done, and a lost call proves nothing.
//
// Over HTTP the Go SDK reports a failed POST as a JSON-RPC error of its own
// (-32005, "rejected by transport") whether or not the request was written;
// the gateway tells it from the upstream's answer and asks the HTTP
// transport's trace whether the request went out. A request written on a
// connection the server had already closed counts as gone out: the client
// cannot tell.
package gateway
