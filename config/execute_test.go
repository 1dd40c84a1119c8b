package config

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
)

// An execute: agent tool reaches review with its outcome timeout (1h when
// silent) and never reaches the executor, which therefore never claims its
// writes; it needs no dispatch secret.
func TestAgentExecutedToolsAreNotTheExecutors(t *testing.T) {
	t.Parallel()
	cfg := loadVerdictFile(t, `
tools:
  billing.credit:
    approvers: [U024BE7LH]
    execute: agent
    outcome_timeout: 15m
  billing.note:
    approvers: [U024BE7LH]
    execute: agent
  billing.refund:
    approvers: [U024BE7LH]
    dispatch: {url: "http://127.0.0.1:9/refunds"}
agents:
  - name: billing-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
`).WithDefaults()
	review := cfg.ReviewTools()
	if c := review["billing.credit"]; !c.AgentExecuted() || c.OutcomeTimeout != 15*time.Minute {
		t.Errorf("billing.credit in review: execute %q, outcome_timeout %s", c.Execute, c.OutcomeTimeout)
	}
	if n := review["billing.note"]; !n.AgentExecuted() || n.OutcomeTimeout != approvals.DefaultOutcomeTimeout {
		t.Errorf("billing.note in review: execute %q, outcome_timeout %s", n.Execute, n.OutcomeTimeout)
	}
	if r := review["billing.refund"]; r.AgentExecuted() {
		t.Error("billing.refund, a dispatch tool, is agent-executed")
	}
	var executed []string
	for name := range cfg.ExecutorTools() {
		executed = append(executed, name)
	}
	if !slices.Equal(executed, []string{"billing.refund"}) {
		t.Errorf("the executor sends for %v, want billing.refund alone", executed)
	}
	if problems := loadProblems(t, `
tools:
  billing.credit:
    approvers: [U024BE7LH]
    execute: agent
agents:
  - name: billing-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
`, map[string]string{"COUNTERSIGN_DISPATCH_SECRET": ""}); problems != nil {
		t.Errorf("an agent-executed tool alone needed: %v", problems)
	}
}

// A tool says exactly one of dispatch and execute: agent, and each refusal
// says what to do.
func TestExecuteRefusesBothAndNeither(t *testing.T) {
	t.Parallel()
	got := strings.Join(loadProblems(t, `
tools:
  both.tool:
    approvers: [U024BE7LH]
    execute: agent
    dispatch: {url: "http://127.0.0.1:9/x"}
  neither.tool:
    approvers: [U024BE7LH]
  odd.tool:
    approvers: [U024BE7LH]
    execute: countersign
  timed.tool:
    approvers: [U024BE7LH]
    outcome_timeout: 5m
    dispatch: {url: "http://127.0.0.1:9/x"}
  verified.tool:
    approvers: [U024BE7LH]
    execute: agent
    verify: {url: "http://127.0.0.1:9/x/{key}"}
`, nil), "\n")
	for _, want := range []string{
		"tools.both.tool: both dispatch and execute: agent",
		"tools.neither.tool: neither dispatch nor execute",
		`tools.odd.tool: execute "countersign" must be agent`,
		"tools.timed.tool: outcome_timeout is for execute: agent tools",
		"tools.verified.tool: verify, precondition and key_aware are countersign's dispatch",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("no problem %q in:\n%s", want, got)
		}
	}
}
