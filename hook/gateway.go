package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/wire"
)

// Gateway is the MCP gateway as the agent API reaches it: the upstream
// tools it exposes, and the reads that pass straight through. serve sets it
// when upstreams are configured.
type Gateway interface {
	// Tools lists every exposed tool, reads and gated ones, by name.
	Tools() []wire.GatewayTool
	// Call passes a read through to its upstream and returns the
	// upstream's CallToolResult as JSON. Its errors: ErrNotARead,
	// ErrUnknownGatewayTool, or an *UpstreamDownError.
	Call(ctx context.Context, tool string, arguments json.RawMessage) (json.RawMessage, error)
}

// The refusals of a gateway call.
var (
	ErrUnknownGatewayTool = errors.New("hook: no upstream exposes this tool")
	ErrNotARead           = errors.New("hook: the tool is gated, not a read")
)

// UpstreamDownError is a call to a tool whose upstream is not connected.
type UpstreamDownError struct{ Upstream string }

func (e *UpstreamDownError) Error() string {
	return "the upstream " + e.Upstream + " is not connected"
}

// maxGatewayCallBody is the largest pass-through call read: a tool's
// arguments, as bounded as an intent's effect.
const maxGatewayCallBody = approvals.MaxBodyBytes

// gatewayHolder holds the gateway serve sets; nil when there is none.
type gatewayHolder struct{ p atomic.Pointer[Gateway] }

// SetGateway makes g the gateway the API's gateway routes reach.
func (h *Handler) SetGateway(g Gateway) { h.gateway.p.Store(&g) }

func (h *Handler) currentGateway() Gateway {
	if g := h.gateway.p.Load(); g != nil {
		return *g
	}
	return nil
}

// gatewayTools lists the upstreams' tools; none without a gateway.
func (h *Handler) gatewayTools(w http.ResponseWriter, r *http.Request, _ approvals.Agent) int {
	list := wire.GatewayToolList{Tools: []wire.GatewayTool{}}
	if g := h.currentGateway(); g != nil {
		list.Tools = append(list.Tools, g.Tools()...)
	}
	return writeJSON(w, http.StatusOK, list)
}

// gatewayCall passes a read through to its upstream: never stored, counted
// and logged by the gateway. A gated tool is refused: its calls are
// intents (POST /v1/requests).
func (h *Handler) gatewayCall(w http.ResponseWriter, r *http.Request, agent approvals.Agent) int {
	if !isJSON(r.Header.Get("Content-Type")) {
		return writeRefusal(w, r, unsupportedMediaType)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxGatewayCallBody))
	if err != nil {
		return writeRefusal(w, r, approvals.RefusalFor(approvals.ErrTooLarge))
	}
	var call wire.GatewayCall
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&call); err != nil || call.Tool == "" {
		return writeRefusal(w, r, approvals.RefusalFor(&approvals.InputError{Code: approvals.CodeMalformedJSON,
			Message: `The body must be one JSON object: {"tool": "<upstream>__<tool>", "arguments": {…}}.`}))
	}
	if len(call.Arguments) == 0 || bytes.Equal(call.Arguments, []byte("null")) {
		call.Arguments = json.RawMessage("{}")
	}
	if call.Arguments[0] != '{' {
		return writeRefusal(w, r, approvals.RefusalFor(&approvals.InputError{Code: approvals.CodeInvalidRequest, Field: "/arguments",
			Message: "arguments must be a JSON object."}))
	}
	g := h.currentGateway()
	if g == nil {
		return writeRefusal(w, r, approvals.Refusal{Code: approvals.CodeUnknownTool, Message: "No upstream is configured, so no tool passes through."})
	}
	result, err := g.Call(r.Context(), call.Tool, call.Arguments)
	var down *UpstreamDownError
	switch {
	case errors.Is(err, ErrUnknownGatewayTool):
		return writeRefusal(w, r, approvals.Refusal{Code: approvals.CodeUnknownTool, Field: "/tool",
			Message: "No upstream exposes " + call.Tool + "; GET /v1/gateway/tools lists them."})
	case errors.Is(err, ErrNotARead):
		return writeRefusal(w, r, approvals.Refusal{Code: approvals.CodeInvalidRequest, Field: "/tool",
			Message: call.Tool + " is gated: request it with POST /v1/requests (tool " + call.Tool + ", effect its arguments)."})
	case errors.As(err, &down):
		return unavailable(w, r, "The upstream "+down.Upstream+" is not connected; countersign keeps trying to reach it.")
	case err != nil:
		h.logger.ErrorContext(r.Context(), "gateway call failed", "tool", call.Tool, "agent", agent.Name, "error", err)
		return unavailable(w, r, "The call to "+call.Tool+" did not complete; calling again is safe for a read.")
	}
	return writeJSON(w, http.StatusOK, wire.GatewayResult{Result: result})
}

// unavailable refuses a call its upstream could not answer, to be tried
// again as a store out of reach is.
func unavailable(w http.ResponseWriter, r *http.Request, message string) int {
	w.Header().Set("Retry-After", strconv.Itoa(int(approvals.RetryAfter/time.Second)))
	return writeRefusal(w, r, approvals.Refusal{Code: approvals.CodeUnavailable, Message: message})
}
