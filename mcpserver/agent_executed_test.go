package mcpserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// payout is an agent-executed request approved by a reviewer: it carries
// its receipt, and its execution waits for the agent's report.
func payout(settled bool, execution string) string {
	return `{"id": "0c5b3a9e-5d1f-4f0e-8a43-9b2f1d7c6e11", "key": "wa_2b", "key_short": "wa_2b", "status": "approved", "round": 1,
		"run_id": "r", "step": 1, "tool": "billing.payout", "effect": {"amount_cents": 42}, "requested_by": "agent",
		"payload_hash": "sha256:00", "created_at": "2026-01-02T03:04:05Z", "expires_at": "2026-01-05T03:04:05Z",
		"decision": {"verdict": "approve", "by": "U0ANA", "at": "2026-01-02T03:04:05Z", "via": "slack", "round": 1},
		"execution": ` + execution + `, "settled": ` + map[bool]string{true: "true", false: "false"}[settled] + `, "version": 3,
		"policy": {"verdict": "ask", "approvals": 1, "approvers": ["U0ANA"], "tier": null, "tier_name": "default", "version": "sha256:ab"},
		"votes": [], "receipt": "eyJ.receipt.sig"}`
}

// wait_for_outcome returns at once when an agent-executed write is
// approved, saying the model must perform it with the key and the receipt
// and report it; report_outcome posts the report and reads the settled
// request.
func TestAnApprovedAgentWriteIsTheModelsToPerformAndReport(t *testing.T) {
	t.Parallel()
	var gets atomic.Int64
	var report atomic.Value
	session := connect(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/v1/tools":
			io.WriteString(w, toolsAnswer)
		case r.Method == http.MethodGet && r.URL.Path == "/v1/requests/wa_2b":
			gets.Add(1)
			io.WriteString(w, payout(false, `{"state": "ready", "attempts": 0}`))
		case r.Method == http.MethodPost && r.URL.Path == "/v1/requests/wa_2b/outcome":
			body, _ := io.ReadAll(r.Body)
			report.Store(string(body))
			io.WriteString(w, payout(true, `{"state": "succeeded", "attempts": 0, "provider_ref": "po_1"}`))
		default:
			http.Error(w, "not expected", http.StatusTeapot)
		}
	}))
	start := time.Now()
	res, text := callText(t, session, "wait_for_outcome", map[string]any{"ref": "wa_2b", "timeout_seconds": 60})
	if took := time.Since(start); took > 10*time.Second || gets.Load() != 1 {
		t.Errorf("wait_for_outcome took %v and %d reads; want one read, no waiting", took, gets.Load())
	}
	if res.IsError || !strings.Contains(text, "request wa_2b: approved by U0ANA; countersign does not send this write: perform it yourself") ||
		!strings.Contains(text, "Idempotency-Key: wa_2b") || !strings.Contains(text, "report_outcome") || strings.Contains(text, "not settled yet") {
		t.Errorf("wait_for_outcome: isError %v, %q", res.IsError, text)
	}
	structured, err := json.Marshal(res.StructuredContent)
	if err != nil || !strings.Contains(string(structured), `"receipt":"eyJ.receipt.sig"`) {
		t.Errorf("the structured result does not carry the receipt: %s, %v", structured, err)
	}

	res, text = callText(t, session, "report_outcome", map[string]any{"ref": "wa_2b", "status": "succeeded", "provider_ref": "po_1"})
	if res.IsError || text != "request wa_2b: approved by U0ANA, executed: po_1" {
		t.Errorf("report_outcome: isError %v, %q", res.IsError, text)
	}
	var sent map[string]any
	if body, _ := report.Load().(string); json.Unmarshal([]byte(body), &sent) != nil || sent["status"] != "succeeded" || sent["provider_ref"] != "po_1" {
		t.Errorf("the outcome posted = %v", report.Load())
	}
	res, _ = callText(t, session, "report_outcome", map[string]any{"ref": "wa_2b", "status": "done"})
	if !res.IsError {
		t.Error("report_outcome took a status that is neither succeeded nor failed")
	}
}
