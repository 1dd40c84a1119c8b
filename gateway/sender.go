package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/countersign/countersign/executor/sender"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Codes of the MCP sender's attempts.
const (
	CodeToolError        = "tool_error"        // the tool ran and said it failed (isError): fatal
	CodeRPCError         = "rpc_error"         // the upstream refused the call (unknown tool, invalid params): fatal
	CodeInvalidArguments = "invalid_arguments" // the approved body is not a JSON object: fatal, nothing sent
	CodeUnknownUpstream  = "unknown_upstream"  // no upstream is configured under the name's prefix: fatal
	CodeUpstreamDown     = "upstream_down"     // not connected when the send began: nothing sent, retried
	CodeConnectionLost   = sender.CodeConnectionLost
	CodeCallTimeout      = "call_timeout"
)

// maxMessage bounds an attempt's message taken from a tool's result.
const maxMessage = 500

// Sender returns the sender that performs approved writes on the
// upstreams: a write's Tool is the exposed name, its Body the call's
// arguments (a JSON object), its Key sent in the call's _meta under
// MetaIdempotencyKey.
func (g *Gateway) Sender() sender.Sender { return mcpSender{g} }

type mcpSender struct{ g *Gateway }

// Outcome maps a code back to what it stood for. connection_lost and
// call_timeout map to review: a code's outcome must never claim the write
// certainly not done after the call went out (the executor revalidates an
// approval only after such codes), even though an idempotent tool's lost
// call was retried when it happened.
func (s mcpSender) Outcome(code string) (sender.Outcome, bool) {
	switch code {
	case CodeToolError, CodeRPCError, CodeInvalidArguments, CodeUnknownUpstream:
		return sender.OutcomeFatal, true
	case CodeUpstreamDown:
		return sender.OutcomeRetry, true
	case CodeConnectionLost, CodeCallTimeout:
		return sender.OutcomeReview, true
	}
	return "", false
}

// Send makes one tools/call of the write. It never resends; a call lost
// after it was sent is retried (by the executor) only for an idempotent
// tool, else it needs a person.
func (s mcpSender) Send(ctx context.Context, w sender.Write) sender.Attempt {
	u, name, ok := s.g.split(w.Tool)
	if !ok {
		return sender.Attempt{Outcome: sender.OutcomeFatal, Code: CodeUnknownUpstream,
			Message: "no upstream is configured for " + w.Tool}
	}
	// A tool the upstream does not list now (it is down, or dropped the
	// tool) is still called: the upstream answers an unknown one with an
	// rpc_error. Its idempotency is then the configuration's alone.
	idempotent := false
	if t, ok := s.g.Tool(w.Tool); ok {
		idempotent = t.Idempotent
	} else {
		for _, n := range u.cfg.Idempotent {
			idempotent = idempotent || n == name
		}
	}
	meta := mcp.Meta{MetaIdempotencyKey: w.Key}
	if w.RequestID != "" {
		meta[MetaRequestID] = w.RequestID
	}
	res, err := u.call(ctx, name, w.Body, meta)
	if err == nil {
		body := resultJSON(res)
		if res.IsError {
			return sender.Attempt{Outcome: sender.OutcomeFatal, Code: CodeToolError,
				Message: u.scrub(firstText(res)), Body: body}
		}
		return sender.Attempt{Outcome: sender.OutcomeSucceeded, Body: body}
	}
	var down *DownError
	var ce *CallError
	switch {
	case errors.As(err, &down):
		return sender.Attempt{Outcome: sender.OutcomeRetry, Code: CodeUpstreamDown, Message: down.Error()}
	case errors.As(err, &ce):
		a := sender.Attempt{Code: ce.Code, Message: ce.Message}
		switch ce.Code {
		case CodeRPCError, CodeInvalidArguments:
			a.Outcome = sender.OutcomeFatal
		case CodeConnectionLost, CodeCallTimeout:
			if idempotent {
				a.Outcome, a.Code = sender.OutcomeRetry, CodeConnectionLost
			} else {
				a.Outcome = sender.OutcomeReview
			}
		default:
			a.Outcome = sender.OutcomeReview
		}
		return a
	}
	return sender.Attempt{Outcome: sender.OutcomeReview, Code: CodeConnectionLost, Message: u.scrub(err.Error())}
}

// resultJSON is what the sender records of a result: its content,
// structured content and isError.
func resultJSON(res *mcp.CallToolResult) []byte {
	content := res.Content
	if content == nil {
		content = []mcp.Content{}
	}
	b, err := json.Marshal(struct {
		Content           []mcp.Content `json:"content"`
		StructuredContent any           `json:"structuredContent,omitempty"`
		IsError           bool          `json:"isError"`
	}{content, res.StructuredContent, res.IsError})
	if err != nil {
		b, _ = json.Marshal(map[string]any{"isError": res.IsError, "unrecorded": err.Error()})
	}
	return b
}

// firstText is a result's first text content, cut to maxMessage bytes.
func firstText(res *mcp.CallToolResult) string {
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			return cut(t.Text, maxMessage)
		}
	}
	return "the tool reported an error"
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
