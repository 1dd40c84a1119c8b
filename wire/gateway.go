package wire

import "encoding/json"

// GatewayTool is an upstream MCP server's tool as countersign's gateway
// exposes it (GET /v1/gateway/tools): a read passes straight through
// (POST /v1/gateway/call); any other is a countersign tool of the same
// name, requested with POST /v1/requests, its effect the call's arguments.
type GatewayTool struct {
	// Name is <upstream>__<tool>, the name MCP clients call it by.
	Name        string          `json:"name"`
	Upstream    string          `json:"upstream"`
	Tool        string          `json:"tool"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
	// Annotations are the upstream's hints, as it declared them.
	Annotations GatewayAnnotations `json:"annotations"`
	// Read is true for a tool that passes straight through.
	Read bool `json:"read"`
	// Up says whether its upstream is connected now.
	Up bool `json:"up"`
	// HoldSeconds is how long an MCP call of a gated tool waits for its
	// outcome before it answers with the pending request.
	HoldSeconds int `json:"hold_seconds,omitempty"`
}

// GatewayAnnotations are an upstream tool's MCP annotations; nil where the
// upstream said nothing.
type GatewayAnnotations struct {
	Title       string `json:"title,omitempty"`
	ReadOnly    *bool  `json:"read_only_hint,omitempty"`
	Destructive *bool  `json:"destructive_hint,omitempty"`
	Idempotent  *bool  `json:"idempotent_hint,omitempty"`
	OpenWorld   *bool  `json:"open_world_hint,omitempty"`
}

// GatewayToolList is the answer of GET /v1/gateway/tools.
type GatewayToolList struct {
	Tools []GatewayTool `json:"tools"`
}

// GatewayCall is the body of POST /v1/gateway/call: a read, passed
// straight through to its upstream.
type GatewayCall struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// GatewayResult is the answer of POST /v1/gateway/call: the upstream's
// CallToolResult (content, structuredContent, isError) as it sent it.
type GatewayResult struct {
	Result json.RawMessage `json:"result"`
}
