package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestExecutorToolsComeFromTheConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "countersign.yaml")
	yaml := `agents:
  - name: billing-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
tools:
  billing.credit:
    approvers: [U024BE7LH]
    dispatch: {method: post, url: "http://billing.internal/credits", timeout: 3s,
               headers: {Authorization: "Bearer ${BILLING_TOKEN}"}}
    key_aware: true
    verify: {url: "http://billing.internal/credits?idempotency_key={key}"}
    precondition: {url: "http://billing.internal/invoices/open?key={key}", headers: {X-Check: "1"}}
    max_attempts: 4
    claim_timeout: 30s
    approval_ttl: 1h
`
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"COUNTERSIGN_CONFIG": path, "BILLING_TOKEN": "s3cret"}
	cfg, err := LoadConfig(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	tool := cfg.executorTools()["billing.credit"]
	if tool.Method != "POST" || tool.URL != "http://billing.internal/credits" || tool.Timeout != 3*time.Second {
		t.Fatalf("dispatch %s %s %s", tool.Method, tool.URL, tool.Timeout)
	}
	if tool.Headers["Authorization"] != "Bearer s3cret" {
		t.Fatalf("the header secret was not expanded: %q", tool.Headers["Authorization"])
	}
	if !tool.KeyAware || tool.MaxAttempts != 4 || tool.ClaimTimeout != 30*time.Second || tool.ApprovalTTL != time.Hour {
		t.Fatalf("tool %+v", tool)
	}
	if tool.Verify == nil {
		t.Fatal("no verify endpoint")
	}
	if u, err := tool.Verify.URLFor("wa_1"); err != nil || u != "http://billing.internal/credits?idempotency_key=wa_1" {
		t.Fatalf("verify %+v: %q, %v", tool.Verify, u, err)
	}
	if tool.Precondition == nil || tool.Precondition.Headers["X-Check"] != "1" {
		t.Fatalf("precondition %+v", tool.Precondition)
	}
	if tool.RequestTTL <= 0 {
		t.Fatal("request_ttl default not carried over")
	}
}
