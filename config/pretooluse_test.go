package config

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/hook"
)

const codingAgentTools = `
tools:
  shell.exec:
    approvers: [U024BE7LH]
    execute: agent
  fs.write:
    approvers: [U024BE7LH]
    execute: agent
  billing.refund:
    approvers: [U024BE7LH]
    dispatch: {url: "http://127.0.0.1:9/refunds"}
agents:
  - name: coding-agent
    token_sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
`

// The pretooluse section reaches the hook as written: the wait, the
// mapping (names and globs) and the answer for unmapped tools.
func TestPreToolUseMapsToolsForTheHook(t *testing.T) {
	t.Parallel()
	cfg := loadVerdictFile(t, codingAgentTools+`
pretooluse:
  wait: 40s
  tools:
    Bash: shell.exec
    Write: fs.write
    "mcp__fs__*": fs.write
  unmapped: deny
`)
	got := cfg.ToolHooks()
	if got.Wait != 40*time.Second || got.Unmapped != hook.PermissionDeny || len(got.Tools) != 3 {
		t.Fatalf("ToolHooks = %+v", got)
	}
	for name, want := range map[string]string{"Bash": "shell.exec", "mcp__fs__write_file": "fs.write"} {
		if tool, ok := got.ToolFor(name); !ok || tool != want {
			t.Errorf("%s maps to %q, %v; want %s", name, tool, ok, want)
		}
	}
	if tool, ok := got.ToolFor("Read"); ok {
		t.Errorf("Read maps to %q", tool)
	}
	// Left out, the section maps nothing and asks.
	if none := loadVerdictFile(t, codingAgentTools).ToolHooks(); len(none.Tools) != 0 || none.Unmapped != "" {
		t.Errorf("no section = %+v", none)
	}
}

// A mapping to a tool that is missing or that countersign would send, a
// bad glob, wait or unmapped answer are refused, each in its own words.
func TestPreToolUseRefusesWhatTheHookCannotDo(t *testing.T) {
	t.Parallel()
	got := strings.Join(loadProblems(t, codingAgentTools+`
pretooluse:
  wait: 5m
  tools:
    Bash: shell.run
    Write: billing.refund
    "mcp__[": fs.write
    Edit: ""
  unmapped: maybe
`, nil), "\n")
	for _, want := range []string{
		"pretooluse.wait is 5m0s: give a duration up to 1m0s",
		`pretooluse.unmapped is "maybe": use ask`,
		`pretooluse.tools.Bash: maps to "shell.run", which is not under tools`,
		`pretooluse.tools.Write: maps to "billing.refund", which is not execute: agent`,
		`pretooluse.tools.mcp__[: "mcp__[" is not a glob`,
		"pretooluse.tools.Edit: name the countersign tool it maps to",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the problems lack %q:\n%s", want, got)
		}
	}
}
