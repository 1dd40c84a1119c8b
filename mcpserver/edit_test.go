package mcpserver_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// editedBody is a request an approver edited, as GET returns it.
const editedBody = `{"id": "0b6c1c39-8f46-4c43-9d7e-0d3b4cb1c0a1", "key": "wa_orig", "key_short": "wa_orig", "status": "edited", "round": 1,
	"run_id": "r", "step": 1, "tool": "billing.credit", "effect": {"amount_cents": 4200}, "summary": "", "reason": "",
	"requested_by": "agent", "payload_hash": "sha256:p", "created_at": "2026-01-02T10:00:00Z", "expires_at": "2026-01-02T11:00:00Z",
	"decision": null, "execution": null, "settled": true, "version": 2, "callback": null,
	"policy": {"verdict": "ask", "approvals": 1, "approvers": ["U0ANA"], "tier": null}, "votes": [],
	"superseded_by": "wa_edit"}`

// wait_for_outcome on an edited request answers at once that it was
// edited, and names the request that replaced it, in the sentence and in
// the structured result.
func TestWaitForOutcomeOnAnEditedRequestNamesTheEdit(t *testing.T) {
	t.Parallel()
	var gets int
	session := connect(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/tools":
			io.WriteString(w, toolsAnswer)
		case r.URL.Path == "/v1/gateway/tools":
			io.WriteString(w, `{"tools": []}`)
		case r.URL.Path == "/v1/requests/wa_orig":
			gets++
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, editedBody)
		default:
			http.Error(w, "not expected", http.StatusTeapot)
		}
	}))
	res, err := session.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait_for_outcome",
		Arguments: map[string]any{"ref": "wa_orig", "timeout_seconds": 30}})
	if err != nil || res.IsError {
		t.Fatalf("wait_for_outcome = %+v, %v", res, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(text, "request wa_orig: edited") || !strings.Contains(text, "wa_edit") {
		t.Errorf("sentence = %q", text)
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Status       string `json:"status"`
		SupersededBy string `json:"superseded_by"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || got.Status != "edited" || got.SupersededBy != "wa_edit" {
		t.Errorf("structured = %s, %v", raw, err)
	}
	if gets != 1 {
		t.Errorf("%d reads of a settled request, want 1 (no waiting)", gets)
	}
}
