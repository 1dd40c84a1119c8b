package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// denial is the hook's answer to a write its policy refuses.
const denial = `{"error": {"code": "denied_by_policy", "message": "Denied by policy (rule \"frozen-invoice\"): Credits to a frozen invoice are never sent. Nothing will be sent; posting the same intent again gets the same answer.",
	"key": "wa_0f", "tier": "frozen-invoice", "request_id": "req_1"}}`

// allowedBy is a request the policy approved on arrival, with its
// execution in state.
func allowedBy(settled bool, execution string) string {
	return `{"id": "0c5b3a9e-5d1f-4f0e-8a43-9b2f1d7c6e10", "key": "wa_1a", "key_short": "wa_1a", "status": "approved", "round": 1,
		"run_id": "r", "step": 1, "tool": "billing.credit", "effect": {"amount_cents": 42}, "requested_by": "agent",
		"payload_hash": "sha256:00", "created_at": "2026-01-02T03:04:05Z", "expires_at": "2026-01-05T03:04:05Z",
		"decision": {"verdict": "approve", "by": "policy:small", "at": "2026-01-02T03:04:05Z", "via": "policy", "round": 1},
		"execution": ` + execution + `, "settled": ` + map[bool]string{true: "true", false: "false"}[settled] + `, "version": 2,
		"policy": {"verdict": "allow", "approvals": 0, "approvers": ["U0ANA"], "tier": 1, "tier_name": "small", "version": "sha256:ab"}, "votes": []}`
}

// callText calls a tool and returns its result and its one sentence.
func callText(t *testing.T, session *mcp.ClientSession, tool string, args any) (*mcp.CallToolResult, string) {
	t.Helper()
	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res, res.Content[0].(*mcp.TextContent).Text
}

// A write the policy denies is a tool error that names the rule and its
// words, says the same arguments get the same answer and what can get
// further, and carries the envelope with the key and the rule; through
// request_write and a typed tool alike, on every call.
func TestDeniedByPolicyIsAToolErrorThatSaysWhatCanProceed(t *testing.T) {
	t.Parallel()
	var posts atomic.Int64
	session := connect(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/tools":
			io.WriteString(w, toolsAnswer)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/requests":
			posts.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, denial)
		default:
			http.Error(w, "not expected", http.StatusTeapot)
		}
	}))
	args := map[string]any{"run_id": "r", "step": 1, "effect": map[string]any{"invoice": "inv_0", "amount_cents": 4200}}
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"request_billing_credit", args},
		{"request_write", map[string]any{"tool": "billing.credit", "run_id": "r", "step": 1, "effect": args["effect"]}},
		{"request_write", map[string]any{"tool": "billing.credit", "run_id": "r", "step": 1, "effect": args["effect"]}},
	}
	for _, c := range calls {
		res, text := callText(t, session, c.tool, c.args)
		for _, want := range []string{
			`denied this write by policy rule "frozen-invoice" (denied_by_policy)`,
			"Credits to a frozen invoice are never sent.",
			"Asking again with the same fields gets the same answer",
			"only a different write, or a person changing the policy, can proceed",
			"request wa_0f", "req_1",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: %q does not say %q", c.tool, text, want)
			}
		}
		var body struct {
			Error struct{ Code, Key, Tier, Message string } `json:"error"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Fatal(err)
		}
		if !res.IsError || body.Error.Code != "denied_by_policy" || body.Error.Key != "wa_0f" || body.Error.Tier != "frozen-invoice" ||
			!strings.HasPrefix(body.Error.Message, "Denied by policy") {
			t.Errorf("%s: isError %v, %s", c.tool, res.IsError, raw)
		}
	}
	if n := posts.Load(); n != int64(len(calls)) {
		t.Errorf("%d posts for %d calls: a denial was sent again", n, len(calls))
	}
}

// A write the policy allows reads as approved by the rule, with no review,
// and waiting for it reads its outcome as after any approval.
func TestAllowedByPolicyReadsAsAnApprovalByTheRule(t *testing.T) {
	t.Parallel()
	session := connect(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/tools":
			io.WriteString(w, toolsAnswer)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/requests":
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, allowedBy(false, `{"state": "ready", "attempts": 0}`))
		case r.Method == http.MethodGet && r.URL.Path == "/v1/requests/wa_1a":
			io.WriteString(w, allowedBy(true, `{"state": "succeeded", "attempts": 1, "provider_ref": "obj_1"}`))
		default:
			http.Error(w, "not expected", http.StatusTeapot)
		}
	}))
	res, text := callText(t, session, "request_write", map[string]any{"tool": "billing.credit", "run_id": "r", "step": 1, "effect": map[string]any{"amount_cents": 42}})
	if res.IsError || text != `request wa_1a: approved by policy rule "small" (no review needed), executing (attempt 1)` {
		t.Errorf("request_write: isError %v, %q", res.IsError, text)
	}
	res, text = callText(t, session, "wait_for_outcome", map[string]any{"ref": "wa_1a", "timeout_seconds": 5})
	if res.IsError || text != `request wa_1a: approved by policy rule "small" (no review needed), executed: obj_1` {
		t.Errorf("wait_for_outcome: isError %v, %q", res.IsError, text)
	}
}

// The write tools tell a model before it calls them that the policy may
// allow or deny, and what a denial means.
func TestWriteToolsSayThePolicyMayDecide(t *testing.T) {
	t.Parallel()
	session := connect(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/gateway/tools" {
			io.WriteString(w, `{"tools": []}`)
			return
		}
		io.WriteString(w, toolsAnswer)
	}))
	tools, err := session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	said := 0
	for _, tool := range tools.Tools {
		if strings.HasPrefix(tool.Name, "request_") {
			said++
			if !strings.Contains(tool.Description, "denied_by_policy, which the same arguments always get again") ||
				!strings.Contains(tool.Description, "already approved (by policy:<rule>)") {
				t.Errorf("%s: %s", tool.Name, tool.Description)
			}
		}
	}
	if said != 2 {
		t.Errorf("%d write tools, want request_write and request_billing_credit", said)
	}
}
