package approvals

import (
	"time"

	"github.com/countersign/countersign/store"
)

// Recheck is what the policy in force says of a write approved under another
// version of it, just before the write is first sent.
type Recheck struct {
	// Stricter is true when the approval no longer suffices: the policy in
	// force denies the write, or asks more approvals than it was given.
	Stricter bool
	// Policy is the policy in force for the request's effect; when Stricter
	// it is frozen on the request's new round.
	Policy store.Policy
	// Denial, when the policy in force denies the write, decides the new
	// round as intake would have: rejected by "policy:<tier>" via policy,
	// with the tier's message as the reason.
	Denial *store.AutoDecision
}

// Recheck evaluates the tool's policy (the one in force now) for a request
// that approved decided under the policy frozen on req. The executor asks
// only when the versions differ, before the first send.
//
// How a tie is broken:
//   - The input is the request's own (its effect, agent and the person it
//     is for) at the time of the check: a rule over the time reads now.
//   - Stricter is decided by Stricter: a denial, or a round that needs more
//     approvals than were given (a human round gave its frozen count, a
//     standing grant one, an allow by policy none).
//   - An equal or looser verdict lets the write go as approved: the same
//     number of approvals under another tier or from other approvers, fewer
//     approvals, or an allow. Who approved is not checked again: they were
//     eligible under the policy they approved under.
//   - Shadow tiers are not in the version and decide nothing here either.
func (t Tool) Recheck(req store.Request, approved store.Decision, now time.Time) (Recheck, error) {
	in, err := NewPolicyInput(req.Snapshot, t.Name, req.RequestedBy, req.RequestedFor, now)
	if err != nil {
		// A stored snapshot is canonical JSON: not reading it is not a
		// reason to let the write through.
		return Recheck{}, err
	}
	p := t.Evaluate(in).Policy
	r := Recheck{Policy: p, Stricter: Stricter(req.Policy, p, approved.Via == ViaGrant)}
	if r.Stricter && p.Verdict == VerdictDeny {
		r.Denial = denial(p)
	}
	return r, nil
}

// denial is the decision of a policy that denies: rejected by
// "policy:<tier>" via policy, with the tier's message as the reason.
func denial(p store.Policy) *store.AutoDecision {
	return &store.AutoDecision{Verdict: store.VerdictReject, DecidedBy: "policy:" + p.TierName, Via: ViaPolicy, Reason: p.Deny,
		Data: policyDecisionData(p)}
}
