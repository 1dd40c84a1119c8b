package config

import (
	"fmt"

	"github.com/countersign/countersign/approvals"
)

// validateExecute reports what is wrong with how the tool's approved writes
// are performed: by countersign (dispatch) or by the agent (execute: agent),
// exactly one of them.
func (t ToolConfig) validateExecute(name string) []error {
	var errs []error
	add := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("tools.%s: "+format, append([]any{name}, args...)...))
	}
	switch t.Execute {
	case "":
		if t.Dispatch.URL == "" {
			add("neither dispatch nor execute: give dispatch.url for countersign to send approved writes, or execute: agent for the agent to perform them itself")
		}
		if t.OutcomeTimeout != 0 {
			add("outcome_timeout is for execute: agent tools; countersign's dispatch has claim_timeout")
		}
	case approvals.ExecuteAgent:
		if t.Dispatch.URL != "" || len(t.Dispatch.Secret) > 0 || len(t.Dispatch.Headers) > 0 {
			add("both dispatch and execute: agent: the agent performs its approved writes itself, so remove dispatch, or execute to have countersign send them")
		}
		if t.Verify != nil || t.Precondition != nil || t.KeyAware {
			add("verify, precondition and key_aware are countersign's dispatch; an execute: agent tool's agent reports its outcome")
		}
		if t.OutcomeTimeout < 0 {
			add("outcome_timeout must be positive")
		}
	default:
		add("execute %q must be agent, or left out for countersign to dispatch", t.Execute)
	}
	return errs
}
