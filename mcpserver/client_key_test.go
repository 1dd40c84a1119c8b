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

// A client key countersign would refuse is refused by the write tools as
// the API names it, before anything is sent: spaces a provider's server
// trims, and a wa_ key in any case that is not the derived one.
func TestWriteToolsRefuseClientKeysOutsideTheRule(t *testing.T) {
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
	other := "wa_976d0e6a1c7d4f0e8b3a2c1d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f7081"
	for _, key := range []string{" " + other, other + " ", "dispatch 0001", "WA_" + other[3:], other, "short"} {
		for _, tool := range []string{"request_write", "request_billing_credit"} {
			args := map[string]any{"run_id": "r", "step": 1, "effect": map[string]any{"amount_cents": 1}, "idempotency_key": key}
			if tool == "request_write" {
				args["tool"] = "billing.credit"
			}
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				t.Fatalf("%s: %v", tool, err)
			}
			var body struct {
				Error struct{ Code, Field, Message string } `json:"error"`
			}
			raw, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(raw, &body)
			if !res.IsError || body.Error.Code != "invalid_request" || body.Error.Field != "/idempotency_key" ||
				!strings.Contains(body.Error.Message, "Idempotency-Key") {
				t.Errorf("%s with key %q: isError %v, %s", tool, key, res.IsError, raw)
			}
		}
	}
	if n := writes.Load(); n != 0 {
		t.Errorf("%d calls reached countersign", n)
	}
}
