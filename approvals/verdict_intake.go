package approvals

import (
	"context"
	"time"

	"github.com/countersign/countersign/store"
)

// The via of a decision made at intake, by the tool's policy or by a
// standing grant.
const (
	ViaPolicy = "policy"
	ViaGrant  = "grant"
)

// verdict evaluates the tool's policy for a new intent and, when it decides
// without a human (an allow, a deny, a live grant), the decision that is
// stored with the request. A policy that asks leaves decided nil.
func (s *Service) verdict(ctx context.Context, tool Tool, agent, requestedFor string, snapshot []byte) (Evaluation, *store.AutoDecision, error) {
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	in := PolicyInput{Tool: tool.Name, Agent: agent, RequestedFor: requestedFor, Now: now}
	if len(tool.Tiers) > 0 || tool.Grants != nil {
		// Only tiers and grants read the effect: a tool with neither does
		// not decode it again.
		var err error
		if in, err = NewPolicyInput(snapshot, tool.Name, agent, requestedFor, now); err != nil {
			return Evaluation{}, nil, invalid("effect", "%v", err)
		}
	}
	ev := tool.Evaluate(in)
	s.Metrics.policyEvaluated(tool.Name, ev)
	switch ev.Policy.Verdict {
	case VerdictAllow:
		return ev, &store.AutoDecision{Verdict: store.VerdictApprove, DecidedBy: "policy:" + ev.Policy.TierName,
			Via: ViaPolicy, MaxAttempts: maxAttempts(tool), Card: ev.Notify, Data: policyDecisionData(ev.Policy)}, nil
	case VerdictDeny:
		return ev, denial(ev.Policy), nil
	}
	g, found, err := s.grantFor(ctx, tool, agent, in, ev.Policy)
	if err != nil || !found {
		return ev, nil, err
	}
	return ev, &store.AutoDecision{Verdict: store.VerdictApprove, DecidedBy: "grant:" + g.ID, Via: ViaGrant,
		MaxAttempts: maxAttempts(tool), Card: true, Grant: g.ID, Data: map[string]any{"grant_id": g.ID, "grantor": g.Grantor}}, nil
}
