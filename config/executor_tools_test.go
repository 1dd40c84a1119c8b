package config

import (
	"os"
	"path/filepath"
	"strings"
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
	cfg, err := Load(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	tool := cfg.ExecutorTools()["billing.credit"]
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

// TestValidateRefusesAKeyOutsideThePathAndQuery: {key} in a verify or
// precondition URL's host or fragment is a configuration error, reported
// without the URL (it may hold a secret).
func TestValidateRefusesAKeyOutsideThePathAndQuery(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
agents: [{name: a, token_sha256: "`+strings.Repeat("0", 64)+`"}]
tools:
  host:
    approvers: [U1]
    dispatch: {url: "http://billing.internal/credits"}
    verify: {url: "http://{key}.billing.internal/objects?token=s3cret-token"}
  fragment:
    approvers: [U1]
    dispatch: {url: "http://billing.internal/credits"}
    precondition: {url: "http://billing.internal/open#{key}"}
  port:
    approvers: [U1]
    dispatch: {url: "http://billing.internal/credits"}
    verify: {url: "http://billing.internal:{key}/objects?token=s3cret-token"}
  fine:
    approvers: [U1]
    dispatch: {url: "http://billing.internal/credits"}
    verify: {url: "http://billing.internal/objects/{key}?again={key}"}
`)
	cfg, err := Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": path, "COUNTERSIGN_DATABASE_URL": "postgres://x", "COUNTERSIGN_DISPATCH_SECRET": "s"}))
	if err != nil {
		t.Fatal(err)
	}
	err = cfg.Validate()
	if err == nil {
		t.Fatal("Validate accepted {key} in a host")
	}
	for _, want := range []string{
		"tools.host: verify.url: {key} may appear only in the path or the query",
		"tools.fragment: precondition.url: {key} may appear only in the path or the query",
		"tools.port: verify.url: not a URL",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate does not report %q; it said:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "tools.fine") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Validate said:\n%v", err)
	}
}

// tools.X.dispatch.secret signs that tool's dispatches instead of
// COUNTERSIGN_DISPATCH_SECRET, which is then needed only by the tools
// without one; Validate names those and never the secrets.
func TestDispatchSecretPerTool(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
agents: [{name: a, token_sha256: "`+strings.Repeat("0", 64)+`"}]
tools:
  billing.credit:
    approvers: [U1]
    dispatch: {url: "http://billing.internal/credits", secret: "${BILLING_DISPATCH_SECRET}"}
  crm.note:
    approvers: [U1]
    dispatch: {url: "http://crm.internal/notes"}
`)
	load := func(env map[string]string) *Config {
		t.Helper()
		env["COUNTERSIGN_CONFIG"], env["COUNTERSIGN_DATABASE_URL"], env["COUNTERSIGN_LISTEN"] = path, "postgres://x", "127.0.0.1:8080"
		cfg, err := Load(envFrom(env))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}

	cfg := load(map[string]string{"BILLING_DISPATCH_SECRET": "billing-only-s3cret", "COUNTERSIGN_DISPATCH_SECRET": "shared-s3cret"})
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tools := cfg.ExecutorTools()
	if got := tools["billing.credit"].Secrets; len(got) != 1 || string(got[0]) != "billing-only-s3cret" {
		t.Errorf("billing.credit signs with %q, want its own secret", got)
	}
	if tools["crm.note"].Secrets != nil {
		t.Errorf("crm.note has a secret of its own: %q", tools["crm.note"].Secrets)
	}

	// Without the shared secret, the tool that would sign with it is named.
	err := load(map[string]string{"BILLING_DISPATCH_SECRET": "billing-only-s3cret"}).Validate()
	want := "COUNTERSIGN_DISPATCH_SECRET is not set, and tools.crm.note has no dispatch.secret of its own"
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "billing.credit has") || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("Validate() = %v, want it to say %q and nothing of billing.credit or the secret", err, want)
	}

	// With a secret on every tool, the shared one is not needed.
	every := writeConfig(t, `
agents: [{name: a, token_sha256: "`+strings.Repeat("0", 64)+`"}]
tools:
  billing.credit:
    approvers: [U1]
    dispatch: {url: "http://billing.internal/credits", secret: "billing-only-s3cret"}
`)
	cfg, err = Load(envFrom(map[string]string{"COUNTERSIGN_CONFIG": every, "COUNTERSIGN_DATABASE_URL": "postgres://x", "COUNTERSIGN_LISTEN": "127.0.0.1:8080"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("every tool has a secret, yet Validate() = %v", err)
	}
}
