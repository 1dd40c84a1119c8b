package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/countersign/countersign/internal/servetest"
)

func tokenHash(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// reloadConfig is a configuration with billing.credit needing approvals
// from reviewers, an agent with tokens, and more tools.
func reloadConfig(tokens []string, approvals int, extra string) string {
	hashes := make([]string, len(tokens))
	for i, t := range tokens {
		hashes[i] = tokenHash(t)
	}
	return fmt.Sprintf(`agents:
  - name: reload-agent
    token_sha256: [%s]
tools:
  billing.credit:
    approvers: [local:ana, local:ben, local:cy]
    approvals: %d
    dispatch: {url: "http://127.0.0.1:9/credits"}
%s`, strings.Join(hashes, ", "), approvals, extra)
}

// SIGHUP reloads agents, tools and policies while serve runs: a new token
// and a new tool work at once, a removed token stops working, a request
// stored before keeps its frozen policy, a long-poll in flight is answered,
// and a file that does not validate is refused with the running
// configuration kept.
func TestSIGHUPReloadsAgentsToolsAndPolicies(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "countersign.yml")
	write := func(content string) {
		t.Helper()
		if err := os.WriteFile(cfgPath, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// steady-token stays through every reload: the long-poll below uses it.
	write(reloadConfig([]string{"old-token", "steady-token"}, 1, ""))
	serve := servetest.Start(t, "COUNTERSIGN_CONFIG="+cfgPath, "COUNTERSIGN_DATA_DIR="+dir, "COUNTERSIGN_DATABASE_URL=",
		"COUNTERSIGN_INBOX=off", "COUNTERSIGN_DISPATCH_SECRET=s", "SLACK_BOT_TOKEN=")
	base := serve.URL
	call := func(method, path, token, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var v map[string]any
		_ = json.Unmarshal(raw, &v)
		return resp.StatusCode, v
	}
	intent := func(tool string, step int) string {
		return fmt.Sprintf(`{"run_id":"reload","step":%d,"tool":%q,"effect":{"invoice":"inv_%d"}}`, step, tool, step)
	}
	approvalsOf := func(v map[string]any) any { p, _ := v["policy"].(map[string]any); return p["approvals"] }
	reloaded := func(msg string, want int) {
		t.Helper()
		if err := serve.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		if !serve.WaitLogCount(`"msg":"`+msg+`"`, want, 10*time.Second) {
			t.Fatalf("no %q after SIGHUP:\n%s", msg, serve.Logs())
		}
	}

	code, first := call(http.MethodPost, "/v1/requests", "old-token", intent("billing.credit", 1))
	if code != http.StatusCreated || approvalsOf(first) != float64(1) {
		t.Fatalf("first request: %d %v", code, first)
	}
	if code, body := call(http.MethodPost, "/v1/requests", "old-token", intent("billing.refund", 2)); code != http.StatusUnprocessableEntity {
		t.Fatalf("a tool not configured yet: %d %v", code, body)
	}
	polled := make(chan int, 1)
	go func() {
		code, _ := call(http.MethodGet, "/v1/requests/"+first["id"].(string)+"?wait=3s", "steady-token", "")
		polled <- code
	}()
	eventually(t, "the long-poll waits before the reload", func() bool {
		return metricsAt(t, base)["countersign_long_polls_waiting"] == 1
	})

	write(reloadConfig([]string{"new-token", "steady-token"}, 2, `  billing.refund:
    approvers: [local:ana]
    dispatch: {url: "http://127.0.0.1:9/refunds"}
`))
	reloaded("configuration reloaded", 1)
	if code, _ := call(http.MethodGet, "/v1/tools", "old-token", ""); code != http.StatusUnauthorized {
		t.Errorf("the removed token answered %d, want 401", code)
	}
	if code, body := call(http.MethodPost, "/v1/requests", "new-token", intent("billing.refund", 2)); code != http.StatusCreated {
		t.Errorf("the new tool with the new token: %d %v", code, body)
	}
	if code, again := call(http.MethodGet, "/v1/requests/"+first["id"].(string), "new-token", ""); code != http.StatusOK || approvalsOf(again) != float64(1) {
		t.Errorf("the request stored before the reload: %d, approvals %v; want its frozen policy of 1", code, approvalsOf(again))
	}
	if code, later := call(http.MethodPost, "/v1/requests", "new-token", intent("billing.credit", 3)); code != http.StatusCreated || approvalsOf(later) != float64(2) {
		t.Errorf("a request after the reload: %d, approvals %v; want the new policy of 2", code, approvalsOf(later))
	}
	select {
	case code := <-polled:
		if code != http.StatusOK {
			t.Errorf("the long-poll across the reload answered %d", code)
		}
	case <-time.After(15 * time.Second):
		t.Error("the long-poll across the reload was never answered")
	}

	write(reloadConfig([]string{"new-token", "steady-token"}, 2, "  billing.refund:\n    approvers: []\n    dispatch: {url: \"http://127.0.0.1:9/refunds\"}\n"))
	reloaded("configuration reload refused; the running configuration stays", 1)
	if code, body := call(http.MethodPost, "/v1/requests", "new-token", intent("billing.refund", 4)); code != http.StatusCreated {
		t.Errorf("after a refused reload the running configuration is gone: %d %v", code, body)
	}
	refusal := serve.Logs()
	if !strings.Contains(refusal, "approvers is empty") {
		t.Errorf("the refusal does not say why:\n%s", refusal)
	}
}
