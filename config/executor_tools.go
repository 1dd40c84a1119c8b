package config

import (
	"context"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/store"
)

// ExecutorTools turns the operator's tool configuration into the executor's.
// Dispatch targets come only from here, never from an agent's request. An
// agent-executed tool (execute: agent) is not among them, so no executor
// claims its executions: they wait for the agent's outcome. Each
// tool re-checks its approvals against its review policy as configured here
// (WithPolicy), so a reload that hands these to the executor also changes
// the policy approvals are re-checked against.
func (c *Config) ExecutorTools() map[string]executor.Tool {
	review := c.ReviewTools()
	tools := make(map[string]executor.Tool, len(c.File.Tools))
	for name, t := range c.File.Tools {
		if t.Execute == approvals.ExecuteAgent {
			continue // the agent sends these itself: the executor never claims them
		}
		et := executor.Tool{
			Name: name, Method: t.Dispatch.Method, URL: t.Dispatch.URL, Headers: t.Dispatch.Headers,
			Timeout: t.Dispatch.Timeout, KeyAware: t.KeyAware, VerifyAfter: t.VerifyAfter, MaxAttempts: t.MaxAttempts,
			ClaimTimeout: t.ClaimTimeout, ApprovalTTL: t.ApprovalTTL, RequestTTL: t.RequestTTL,
		}
		if len(t.Dispatch.Secret) > 0 {
			et.Secrets = t.Dispatch.Secret.bytes()
		}
		if t.Verify != nil {
			et.Verify = &executor.Endpoint{URL: t.Verify.URL, Headers: t.Verify.Headers}
		}
		if t.Precondition != nil {
			et.Precondition = &executor.Endpoint{URL: t.Precondition.URL, Headers: t.Precondition.Headers}
		}
		tools[name] = WithPolicy(et, review[name])
	}
	return tools
}

// WithPolicy returns et with review, the tool's review policy, as the policy
// in force its approvals are re-checked against before their first send
// (approvals.Tool.Recheck, at the time of the check).
func WithPolicy(et executor.Tool, review approvals.Tool) executor.Tool {
	et.PolicyVersion = review.PolicyVersion()
	et.Recheck = func(_ context.Context, req store.Request, approved store.Decision) (executor.PolicyRecheck, error) {
		r, err := review.Recheck(req, approved, time.Now())
		return executor.PolicyRecheck(r), err
	}
	return et
}
