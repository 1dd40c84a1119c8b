package main

import (
	"bytes"
	"strings"
	"testing"
)

const checkedConfig = `
slack: {channel: C0APPROVALS}
agents:
  - name: billing-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    callback: {url: "https://agent.internal/cb", secret: "${CALLBACK_SECRET}"}
tools:
  billing.credit:
    approvers: [U024BE7LH]
    dispatch: {url: "http://127.0.0.1:9/credits", secret: "dispatch-secret-value", headers: {Authorization: "Bearer sk_live_x"}}
    effect_schema: {type: object, required: [invoice]}
`

// config check prints the effective configuration, every default filled in
// and no secret's value, and what it prints loads as a valid configuration.
func TestConfigCheckPrintsTheEffectiveConfigurationRedacted(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, checkedConfig)
	env := envFrom(map[string]string{"CALLBACK_SECRET": "cb-secret-value", "COUNTERSIGN_DISPATCH_SECRET": "env-dispatch-secret",
		"COUNTERSIGN_DATABASE_URL": "postgres://app:db-password@127.0.0.1:5432/countersign", "SLACK_BOT_TOKEN": "xoxb-secret-token",
		"SLACK_SIGNING_SECRET": "signing-secret-value"})
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"config", "check", path}, env, nil, &out, &errOut); code != 0 {
		t.Fatalf("config check exited %d: %s", code, errOut.String())
	}
	printed := out.String()
	for _, secret := range []string{"cb-secret-value", "dispatch-secret-value", "sk_live_x", "env-dispatch-secret", "db-password", "xoxb-secret-token", "signing-secret-value"} {
		if strings.Contains(printed, secret) {
			t.Errorf("config check printed the secret %q:\n%s", secret, printed)
		}
	}
	for _, want := range []string{"secret: '[redacted]'", "Authorization: '[redacted]'", "dispatch_schedule: '@every 1s'", "timeout: 10s", "max_attempts: 5",
		"SLACK_BOT_TOKEN set", "PostgreSQL at postgres://app:xxxxx@127.0.0.1:5432/countersign", "- invoice"} {
		if !strings.Contains(printed, want) {
			t.Errorf("config check did not print %q:\n%s", want, printed)
		}
	}
	// What it prints is itself a configuration serve would load.
	again := writeConfig(t, printed)
	if code := run(t.Context(), []string{"config", "check", again}, env, nil, &bytes.Buffer{}, &errOut); code != 0 {
		t.Errorf("the printed configuration does not check: %s", errOut.String())
	}
}

// A configuration serve would refuse exits 1 with every problem at its line.
func TestConfigCheckRefusesWithEveryProblem(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, validAgent+"tools:\n  billing.credit:\n    approvers: []\n    dispatch: {url: \"ftp://x\"}\n")
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"config", "check", path}, envFrom(map[string]string{"COUNTERSIGN_DISPATCH_SECRET": "s"}), nil, &out, &errOut)
	if code != 1 || out.Len() != 0 {
		t.Fatalf("config check exited %d, printed %q", code, out.String())
	}
	for _, want := range []string{"line 6, column 3: tools.billing.credit: approvers is empty", "line 6, column 3: tools.billing.credit: dispatch.url must be an http or https URL"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("no %q in:\n%s", want, errOut.String())
		}
	}
	if code := run(t.Context(), []string{"config", "lint", path}, envFrom(nil), nil, &out, &errOut); code != 2 {
		t.Errorf("config lint exited %d, want 2 (usage)", code)
	}
}
