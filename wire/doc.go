// Package wire is the agent API's representation, written once in Go: the
// request as GET /v1/requests/{ref} answers it (and as a callback's body
// carries it), a page of the list, a tool of GET /v1/tools, the intake
// body of POST /v1/requests and the error envelope. The server (hook)
// encodes these types, the Go client decodes them (client's names are
// aliases of them) and the MCP server takes its arguments and gives its
// results in them.
//
// The OpenAPI document (hook/openapi.json) says the same for other
// languages; the hook's tests hold every answer to it, and the client's
// decode real answers with unknown fields refused, so a field added here
// and not there (or there and not here) fails a test.
//
// It imports the standard library only, so the client stays vendorable
// alone.
package wire
