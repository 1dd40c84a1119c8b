package wire

// ErrorBody is the one error envelope of the agent API:
// {"error": {"code": …, "message": …}}.
type ErrorBody struct {
	Error Error `json:"error"`
}

// Error is a refusal: its stable code (the ErrorCode schema of the OpenAPI
// document), a sentence for a human and, where they apply, the field at
// fault and the rest.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Field names the value at fault: a header or a query parameter as
	// itself, a body member by its JSON pointer.
	Field string `json:"field,omitempty"`
	// Errors lists every value at fault when there are several
	// (invalid_effect); Field and Message are the first.
	Errors []Violation `json:"errors,omitempty"`
	// Status is, for pruned, how the key's request ended.
	Status string `json:"status,omitempty"`
	// Tools are, for unknown_tool, the tools the agent may use.
	Tools []string `json:"tools,omitempty"`
	// Key and Tier are, for denied_by_policy, the denied request's key and
	// the rule that denied it.
	Key  string `json:"key,omitempty"`
	Tier string `json:"tier,omitempty"`
	// RequestID names the request in the server's logs (Request-Id).
	RequestID string `json:"request_id,omitempty"`
}

// Violation is one value at fault: its JSON pointer and why.
type Violation struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}
