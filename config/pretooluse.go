package config

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/hook"
)

// PreToolUseConfig maps a coding agent's tools to countersign tools for its
// permission hooks (POST /v1/hooks/pretooluse and posttooluse,
// docs/HOOKS.md).
type PreToolUseConfig struct {
	// Wait is how long a call that asks a person waits for the decision
	// before it answers ask (default 50s, at most 60s): below the hook's
	// own timeout.
	Wait time.Duration `yaml:"wait"`
	// Tools maps the agent's tool names, exactly or by a glob ("mcp__*"),
	// to countersign tools, each execute: agent: the tool runs in the
	// agent, and countersign never sends it.
	Tools map[string]string `yaml:"tools"`
	// Unmapped is the answer for a tool with no mapping: ask (the agent's
	// own prompt, the default), allow or deny.
	Unmapped string `yaml:"unmapped"`
}

// validatePreToolUse is Validate's part for pretooluse: every mapped tool
// is configured and execute: agent, every glob is one, and the wait and
// the unmapped answer are ones the hook gives.
func (c *Config) validatePreToolUse() []error {
	p := c.File.PreToolUse
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if p.Wait < 0 || p.Wait > hook.MaxWait {
		add("pretooluse.wait is %s: give a duration up to %s (such as 50s), below the hook's own timeout, or leave it out (%s)",
			p.Wait, hook.MaxWait, hook.DefaultToolHookWait)
	}
	switch p.Unmapped {
	case "", hook.PermissionAsk, hook.PermissionAllow, hook.PermissionDeny:
	default:
		add("pretooluse.unmapped is %q: use ask (the agent's own prompt), allow or deny", p.Unmapped)
	}
	names := make([]string, 0, len(p.Tools))
	for name := range p.Tools {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		target := p.Tools[name]
		if strings.TrimSpace(name) == "" {
			add("pretooluse.tools: a tool name is empty")
			continue
		}
		if _, err := path.Match(name, ""); err != nil {
			add("pretooluse.tools.%s: %q is not a glob: %v", name, name, err)
		}
		tool, ok := c.File.Tools[target]
		switch {
		case target == "":
			add("pretooluse.tools.%s: name the countersign tool it maps to", name)
		case !ok:
			add("pretooluse.tools.%s: maps to %q, which is not under tools", name, target)
		case tool.Execute != approvals.ExecuteAgent:
			add("pretooluse.tools.%s: maps to %q, which is not execute: agent: the hook's tool runs in the agent, so countersign must never send it", name, target)
		}
	}
	return errs
}

// ToolHooks is how the permission hooks map tools; Validate has checked it.
func (c *Config) ToolHooks() hook.ToolHooks {
	p := c.File.PreToolUse
	return hook.ToolHooks{Wait: p.Wait, Tools: p.Tools, Unmapped: p.Unmapped}
}
