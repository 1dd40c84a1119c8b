package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/countersign/countersign/client"
	"github.com/countersign/countersign/mcpserver"
)

// connect builds the MCP server against api, a stand-in for countersign's
// HTTP API (the real one drives these tools in cmd/countersign's MCP tests),
// and returns a Go SDK client session to it.
func connect(t *testing.T, api http.Handler) *mcp.ClientSession {
	t.Helper()
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	ctx := context.Background()
	server, err := mcpserver.New(ctx, mcpserver.Config{Client: client.New(srv.URL, "token"), CallTimeout: 2 * time.Second, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	serverSide, clientSide := mcp.NewInMemoryTransports()
	if _, err := server.Connect(ctx, serverSide, nil); err != nil {
		t.Fatal(err)
	}
	session, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, clientSide, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

const toolsAnswer = `{"tools": [{"name": "billing.credit", "reversible": false, "policy": {"approvals": 1, "approvers": ["U0ANA"]},
	"effect_schema": {"type": "object", "properties": {"amount_cents": {"type": "integer"}}}},
	{"name": "notes.add", "reversible": true, "policy": {"approvals": 1, "approvers": ["U0ANA"]}},
	{"name": "write", "reversible": true, "policy": {"approvals": 1, "approvers": ["U0ANA"]}, "effect_schema": {"type": "object"}},
	{"name": "crm.note", "reversible": true, "policy": {"approvals": 1, "approvers": ["U0ANA"]}, "effect_schema": {"type": "object"}},
	{"name": "crm_note", "reversible": true, "policy": {"approvals": 1, "approvers": ["U0ANA"]}, "effect_schema": {"type": "object"}}]}`

// Arguments a tool does not take are refused before anything is sent,
// named as the API would name them; a typed tool writes with its own tool
// only; and a tool named like a fixed one gets no typed tool, nor do two
// tools whose names become one typed name (neither would be its own).
func TestArgumentsAreCheckedBeforeAnythingIsSent(t *testing.T) {
	t.Parallel()
	var writes atomic.Int64
	session := connect(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/tools" {
			io.WriteString(w, toolsAnswer)
			return
		}
		if r.URL.Path == "/v1/gateway/tools" {
			io.WriteString(w, `{"tools": []}`)
			return
		}
		writes.Add(1)
		http.Error(w, "not expected", http.StatusTeapot)
	}))
	ctx := context.Background()
	tools, err := session.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if got := strings.Join(names, " "); got != "cancel_request get_request list_requests list_tools report_outcome request_billing_credit request_write wait_for_outcome" {
		t.Errorf("tools: %s", got)
	}
	for _, c := range []struct {
		tool  string
		args  any
		field string
	}{
		{"request_billing_credit", map[string]any{"tool": "notes.add", "run_id": "r", "step": 1, "effect": map[string]any{}}, "/tool"},
		{"request_write", map[string]any{"tool": "notes.add", "run_id": 7, "step": 1, "effect": map[string]any{}}, "/run_id"},
		// A typed tool names the argument as it was sent, not as the
		// server holds it.
		{"request_billing_credit", map[string]any{"run_id": 7, "step": 1, "effect": map[string]any{}}, "/run_id"},
		{"request_billing_credit", map[string]any{"run_id": "r", "step": 1, "effect": map[string]any{}, "summary": false}, "/summary"},
		{"request_billing_credit", map[string]any{"tool": "", "run_id": "r", "step": 1, "effect": map[string]any{}}, "/tool"},
		{"get_request", map[string]any{"ref": ""}, "/ref"},
		{"cancel_request", map[string]any{"key": "wa_1"}, "/key"},
		{"wait_for_outcome", map[string]any{"ref": "wa_1", "timeout_seconds": 601}, "/timeout_seconds"},
		// 0 is refused, as the API refuses it, not taken for the default.
		{"wait_for_outcome", map[string]any{"ref": "wa_1", "timeout_seconds": 0}, "/timeout_seconds"},
		{"wait_for_outcome", map[string]any{"ref": "wa_1", "timeout_seconds": -1}, "/timeout_seconds"},
		{"list_requests", map[string]any{"settled": "yes"}, "/settled"},
		{"list_requests", map[string]any{"limit": 0}, "/limit"},
		{"list_requests", map[string]any{"limit": 101}, "/limit"},
	} {
		res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		var body struct {
			Error struct{ Code, Field string } `json:"error"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(raw, &body)
		if !res.IsError || body.Error.Code != "invalid_request" || body.Error.Field != c.field {
			t.Errorf("%s %v: isError %v, %s", c.tool, c.args, res.IsError, raw)
		}
	}
	if n := writes.Load(); n != 0 {
		t.Errorf("%d calls reached countersign", n)
	}
}

// A refusal is a tool error with the API's envelope; a 503 (countersign's
// database out of reach) is retried until the call's time ends, then is
// the tool error "unreachable".
func TestRefusalsAreToolErrors(t *testing.T) {
	t.Parallel()
	session := connect(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/tools":
			io.WriteString(w, toolsAnswer)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/requests/wa_1/cancel":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusConflict)
			io.WriteString(w, `{"error": {"code": "already_decided", "message": "The request was already decided.", "request_id": "req_1"}}`)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	ctx := context.Background()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "cancel_request", Arguments: map[string]any{"ref": "wa_1"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, "already_decided") || !strings.Contains(text, "req_1") {
		t.Errorf("cancel of a decided request: %v %q", res.IsError, text)
	}
	res, err = session.CallTool(ctx, &mcp.CallToolParams{Name: "get_request", Arguments: map[string]any{"ref": "wa_1"}})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	if !res.IsError || !strings.Contains(string(raw), `"code":"unreachable"`) || !strings.Contains(string(raw), "gave up after") {
		t.Errorf("a countersign that answers 503: %v %s", res.IsError, raw)
	}
}
