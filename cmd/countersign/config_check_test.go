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
	env := envFrom(map[string]string{"CALLBACK_SECRET": "cb-secret-value", "COUNTERSIGN_DISPATCH_SECRET": "env-dispatch-secret", "COUNTERSIGN_LISTEN": "127.0.0.1:8080",
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
	path := writeConfig(t, "\nagents:\n  - name: billing-agent\n    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\ntools:\n  billing.credit:\n    approvers: []\n    dispatch: {url: \"ftp://x\"}\n")
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"config", "check", path}, envFrom(map[string]string{"COUNTERSIGN_DISPATCH_SECRET": "s"}), nil, &out, &errOut)
	if code != 1 || out.Len() != 0 {
		t.Fatalf("config check exited %d, printed %q", code, out.String())
	}
	for _, want := range []string{"line 7, column 5: tools.billing.credit: approvers is empty", "line 8, column 16: tools.billing.credit: dispatch.url must be an http or https URL"} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("no %q in:\n%s", want, errOut.String())
		}
	}
	if code := run(t.Context(), []string{"config", "lint", path}, envFrom(nil), nil, &out, &errOut); code != 2 {
		t.Errorf("config lint exited %d, want 2 (usage)", code)
	}
}

// config check prints what serve will use: no credential a URL carries, an
// effect schema and a tier's constant as written (false, 0 and "" are
// values there, not defaults), and the defaults the executor and the
// callback deliverer apply, not zeros.
func TestConfigCheckPrintsWhatServeUses(t *testing.T) {
	t.Parallel()
	path := writeConfig(t, `
slack: {channel: C0APPROVALS}
agents:
  - name: billing-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    callback: {url: "https://agent.internal/cb?sig=cb-query-secret", secret: cb-secret-value}
tools:
  billing.credit:
    approvers: [U024BE7LH]
    dispatch: {url: "https://ops:dispatch-url-password@provider.internal/credits?api_key=query-secret&mode=live"}
    verify: {url: "https://provider.internal/credits/{key}?token=verify-query-secret&key={key}"}
    tiers:
      - when: {field: amount_cents, gte: 0}
        approvers: [S0GROUP]
        approvals: 2
    effect_schema:
      type: object
      additionalProperties: false
      properties:
        amount_cents: {type: integer, minimum: 0}
        flag: {const: false}
        note: {const: ""}
        tags: {type: array, items: false}
  slow.tool:
    approvers: [U024BE7LH]
    dispatch: {url: "https://token-as-user@provider.internal/slow", timeout: 25s}
  keyed.tool:
    approvers: [U024BE7LH]
    key_aware: true
    dispatch: {url: "https://provider.internal/keyed"}
`)
	// Loopback: the check prints "[redacted]" for a secret, too short to
	// load again beyond this machine.
	env := envFrom(map[string]string{"COUNTERSIGN_DISPATCH_SECRET": strings.Repeat("d", 32), "COUNTERSIGN_LISTEN": "127.0.0.1:8080",
		"COUNTERSIGN_DATABASE_URL": "postgres://app@127.0.0.1:5432/countersign?password=db-query-password&sslmode=disable"})
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"config", "check", path}, env, nil, &out, &errOut); code != 0 {
		t.Fatalf("config check exited %d: %s", code, errOut.String())
	}
	printed := out.String()
	for _, secret := range []string{"cb-query-secret", "dispatch-url-password", "query-secret", "verify-query-secret", "token-as-user", "db-query-password"} {
		if strings.Contains(printed, secret) {
			t.Errorf("config check printed the secret %q:\n%s", secret, printed)
		}
	}
	for _, want := range []string{
		"url: https://agent.internal/cb?sig=xxxxx",
		"url: https://ops:xxxxx@provider.internal/credits?api_key=xxxxx&mode=xxxxx",
		"url: https://provider.internal/credits/{key}?token=xxxxx&key={key}",
		"url: https://xxxxx@provider.internal/slow",
		"PostgreSQL at postgres://xxxxx@127.0.0.1:5432/countersign?password=xxxxx&sslmode=xxxxx",
		"additionalProperties: false", "minimum: 0", "const: false", "const: \"\"", "items: false", "flag:",
		"gte: 0",
		"verify_after: 30s", // billing.credit: the executor's least settle time
		"verify_after: 50s", // slow.tool: twice its 25s dispatch timeout
		"callbacks:\n    timeout: 10s\n    poll: 1s\n    retry_base: 2s\n",
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("config check did not print %q:\n%s", want, printed)
		}
	}
	if strings.Count(printed, "verify_after:") != 2 || strings.Contains(printed, ": 0s") {
		t.Errorf("a key-aware tool has no settle time, and no duration serve uses is zero:\n%s", printed)
	}
	// What it prints loads, and prints the same again.
	again := writeConfig(t, printed)
	var out2 bytes.Buffer
	if code := run(t.Context(), []string{"config", "check", again}, env, nil, &out2, &errOut); code != 0 {
		t.Fatalf("the printed configuration does not check: %s", errOut.String())
	}
	body := func(s string) string { _, b, _ := strings.Cut(s, "\n"); return b }
	if body(out2.String()) != body(printed) {
		t.Errorf("printed again, the configuration changed:\n%s\nthen:\n%s", printed, out2.String())
	}
}
