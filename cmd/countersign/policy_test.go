package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A file whose callback secret is a ${VAR} the test does not set, and no
// COUNTERSIGN_DISPATCH_SECRET: policy commands read them as placeholders.
const policyConfig = `
slack: {channel: C0APPROVALS}
agents:
  - name: billing-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
    callback: {url: "https://agent.internal/cb", secret: "${CALLBACK_SECRET}"}
tools:
  billing.credit:
    approvers: [U024BE7LH, S0FINANCE]
    tiers:
      - name: blocked
        when: {field: customer, eq: C666}
        deny: "this customer is blocked"
      - name: small
        when: 'effect.amount_cents <= 5000 && effect.currency == "USD"'
        approvals: 0
        notify: true
      - name: would-allow-medium
        when: effect.amount_cents <= 20000
        approvals: 0
        shadow: true
      - name: big
        when: effect.amount_cents > 100000 && agent != "trusted-agent"
        approvals: 2
        approvers: [S0FINLEADS]
    dispatch: {url: "http://127.0.0.1:9/credits"}
`

const policyCases = `
- name: small USD credit is allowed
  tool: billing.credit
  agent: billing-agent
  effect: {invoice: inv_1, amount_cents: 4200, currency: USD}
  expect: {verdict: allow, tier: small}
- name: a decimal amount is compared as a number
  tool: billing.credit
  effect: {amount_cents: 4999.5, currency: USD}
  expect: {verdict: allow, tier: small}
- name: blocked customer is denied
  tool: billing.credit
  effect: {customer: C666, amount_cents: 4200, currency: USD}
  expect: {verdict: deny, tier: blocked}
- name: big credit needs two
  tool: billing.credit
  agent: billing-agent
  requested_for: slack:U0ANA
  effect: {amount_cents: 250000, currency: USD}
  expect: {verdict: ask, tier: big}
- name: a missing amount asks
  tool: billing.credit
  effect: {currency: USD}
  expect: {verdict: ask, tier: default}
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestPolicyTestPassesWhenEveryCaseDoes(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, policyConfig)
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"policy", "test", cfg, writeFile(t, "cases.yml", policyCases)}, envFrom(nil), nil, &out, &errOut)
	if code != 0 {
		t.Fatalf("policy test exited %d:\n%s%s", code, out.String(), errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 6 || lines[0] != "ok   small USD credit is allowed: allow by small" || lines[5] != "5 cases pass" {
		t.Errorf("output:\n%s", out.String())
	}
}

func TestPolicyTestNamesEachCaseThatDiffers(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, policyConfig)
	// JSON is YAML: the same cases, two of them expecting what they do not get.
	cases := `[
	  {"name": "small", "tool": "billing.credit", "effect": {"amount_cents": 4200, "currency": "USD"}, "expect": {"verdict": "allow", "tier": "small"}},
	  {"name": "euros", "tool": "billing.credit", "effect": {"amount_cents": 4200, "currency": "EUR"}, "expect": {"verdict": "allow"}},
	  {"name": "huge", "tool": "billing.credit", "effect": {"amount_cents": 123456789012345678901234567890, "currency": "USD"}, "expect": {"verdict": "ask", "tier": "default"}},
	  {"name": "unknown tool", "tool": "billing.refund", "effect": {}, "expect": {"verdict": "ask"}}
	]`
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"policy", "test", cfg, writeFile(t, "cases.json", cases)}, envFrom(nil), nil, &out, &errOut)
	if code != 1 {
		t.Fatalf("policy test exited %d, want 1:\n%s%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{
		"ok   small: allow by small",
		"FAIL euros: expected allow, got ask by default",
		"FAIL huge: expected ask by default, got ask by big",
		`FAIL unknown tool: no tool "billing.refund" is configured`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if want := "3 of 4 cases differ: euros; huge; unknown tool"; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr lacks %q: %s", want, errOut.String())
	}
}

func TestPolicyCommandsRefuseABadConfiguration(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, strings.Replace(policyConfig, `effect.currency == "USD"'`, `effect.currency = "USD"'`, 1))
	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"policy", "test", cfg, writeFile(t, "cases.yml", policyCases)}, envFrom(nil), nil, &out, &errOut)
	if code != 1 || !strings.Contains(errOut.String(), "tiers[1].when: the expression at line 15, column 63: Syntax error") {
		t.Errorf("exited %d:\n%s", code, errOut.String())
	}
	if code := run(t.Context(), []string{"policy", "test", cfg}, envFrom(nil), nil, &out, &errOut); code != 2 {
		t.Errorf("policy test without CASES exited %d, want 2", code)
	}
}

func TestPolicyExplainSaysWhy(t *testing.T) {
	t.Parallel()
	cfg := writeConfig(t, policyConfig)
	intent := writeFile(t, "intent.json", `{"run_id":"r-7f3a","step":6,"tool":"billing.credit","agent":"billing-agent",
		"requested_for":"U0ANA","effect":{"invoice":"inv_8841","amount_cents":15000,"currency":"USD"}}`)
	var out, errOut bytes.Buffer
	if code := run(t.Context(), []string{"policy", "explain", cfg, intent}, envFrom(nil), nil, &out, &errOut); code != 0 {
		t.Fatalf("policy explain exited %d: %s", code, errOut.String())
	}
	got := out.String()
	for _, want := range []string{
		"verdict:   ask", "tier:      default", "approvals: 1", "approvers: U024BE7LH, S0FINANCE", "version:   sha256:",
		"blocked                  did not match (the effect has no customer)",
		"small                    did not match\n",
		"would-allow-medium (shadow) matched: would allow, decides nothing",
		"big                      did not match\n",
		"small                    did not match\n",
		`when: effect.amount_cents > 100000 && agent != "trusted-agent"`,
		"default                  applies: no tier decided",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("explain lacks %q:\n%s", want, got)
		}
	}

	// A big credit: the tier that decides, and the ones after it not reached.
	big := writeFile(t, "big.json", `{"run_id":"r","step":1,"tool":"billing.credit","effect":{"amount_cents":250000,"currency":"USD"}}`)
	out.Reset()
	if code := run(t.Context(), []string{"policy", "explain", cfg, big}, envFrom(nil), nil, &out, &errOut); code != 0 {
		t.Fatalf("policy explain exited %d: %s", code, errOut.String())
	}
	for _, want := range []string{"verdict:   ask", "tier:      big", "approvals: 2", "approvers: S0FINLEADS", "big                      matched: ask"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("explain lacks %q:\n%s", want, out.String())
		}
	}

	// A CEL rule that reads a field the effect lacks does not match, and
	// explain says which.
	noCurrency := writeFile(t, "no-currency.json", `{"run_id":"r","step":1,"tool":"billing.credit","effect":{"amount_cents":100}}`)
	out.Reset()
	if code := run(t.Context(), []string{"policy", "explain", cfg, noCurrency}, envFrom(nil), nil, &out, &errOut); code != 0 {
		t.Fatalf("policy explain exited %d: %s", code, errOut.String())
	}
	if want := "small                    did not match (no such key: currency)"; !strings.Contains(out.String(), want) {
		t.Errorf("explain lacks %q:\n%s", want, out.String())
	}

	// An intent intake would refuse is refused here too.
	bad := writeFile(t, "bad.json", `{"run_id":"r","step":1,"tool":"billing.credit","effect":{},"extra":1}`)
	if code := run(t.Context(), []string{"policy", "explain", cfg, bad}, envFrom(nil), nil, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), `unknown field "extra"`) {
		t.Errorf("explain of an invalid intent exited %d: %s", code, errOut.String())
	}
}
