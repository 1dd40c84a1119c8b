package executor

import (
	"context"
	"fmt"

	"github.com/countersign/countersign/store"
)

// PolicyRecheck is what a tool's policy in force makes of an approved
// request (Tool.Recheck), as the review service decides it: the executor
// applies it and knows none of the policy's rules.
type PolicyRecheck struct {
	// Stricter is true when the approval no longer suffices: the policy in
	// force denies the write, or asks more approvals than were given.
	Stricter bool
	// Policy is the policy in force for the request's effect, frozen on the
	// new round when Stricter.
	Policy store.Policy
	// Denial, set when the policy in force denies the write, decides the
	// new round at once.
	Denial *store.AutoDecision
}

// recheckPolicy re-checks an approval against the tool's policy in force,
// read now rather than when the claim was taken, so that a configuration
// reloaded while the claim waited counts. The claim carries the version its
// request was frozen under: when it is the version in force, nothing is
// read; otherwise the request and its approving decision are, and a
// stricter verdict (Tool.Recheck) makes the approval stale: the request
// goes to a new round under the policy in force, or is denied by it, and
// the superseded event names both versions. A write approved for its agent
// to perform, whose tool countersign now dispatches, needs review unsent. An equal or looser verdict
// lets the write go as approved.
func (e *Executor) recheckPolicy(ctx context.Context, c store.Claim) (*staleness, error) {
	tool := e.toolset.Load().tools[c.Tool]
	if tool.Recheck == nil || tool.PolicyVersion == "" || tool.PolicyVersion == c.PolicyVersion {
		return nil, nil
	}
	req, err := e.db.RequestByID(ctx, c.RequestID)
	if err != nil {
		return nil, fmt.Errorf("reading the request: %w", err)
	}
	if req.Policy.AgentExecuted() {
		// Approved for its agent to perform, and perhaps performed with
		// its receipt: countersign sending it too could write it twice.
		return &staleness{code: CodeExecuteChanged, escalate: true,
			msg: "approved for its agent to perform (execute: agent), but the tool now has countersign send its writes; nothing was sent: settle it by hand"}, nil
	}
	approved, err := e.db.DecisionFor(ctx, c.RequestID, c.Round)
	if err != nil {
		return nil, fmt.Errorf("reading the approval: %w", err)
	}
	r, err := tool.Recheck(ctx, req, approved)
	if err != nil {
		return nil, fmt.Errorf("evaluating the policy: %w", err)
	}
	if !r.Stricter {
		return nil, nil
	}
	s := &staleness{code: CodePolicyStricter, policy: &r.Policy, denial: r.Denial,
		data: map[string]any{"policy_version": req.Policy.Version, "new_policy_version": r.Policy.Version}}
	if r.Denial != nil {
		s.msg = fmt.Sprintf("the policy in force (%s) denies this write by its rule %q: %s", r.Policy.Version, r.Policy.TierName, r.Policy.Deny)
	} else {
		s.msg = fmt.Sprintf("the policy in force (%s) asks %d approvals of this write by its rule %q, more than it was given",
			r.Policy.Version, r.Policy.Needed(), r.Policy.TierName)
	}
	return s, nil
}
