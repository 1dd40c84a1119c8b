package approvals

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/store"
)

// Metrics counts what the service decides; the hook counts its traffic
// (hook.Metrics).
type Metrics struct {
	// Votes counts reviewers' votes by verdict and what each did: decided
	// (the vote that decided its round), counted (recorded, the round still
	// open), repeat (the reviewer had voted in the round already).
	Votes *prometheus.CounterVec
	// PolicyVerdicts counts the rules that matched new intents, by tool,
	// rule, verdict and whether the rule is a shadow (recorded, deciding
	// nothing).
	PolicyVerdicts *prometheus.CounterVec

	// What review costs the reviewers (fatigue.go).

	// Decisions counts decided rounds by source (human, policy, grant:
	// DecisionSource) and verdict.
	Decisions *prometheus.CounterVec
	// TimeToDecision is how long a human decision took from the start of
	// its round (the request's creation for the first).
	TimeToDecision prometheus.Histogram
	// ReviewerApprovals counts approving votes by reviewer. The label is
	// bounded: only a vote that passed MayVote is counted, so its values
	// are the configured approvers and their user groups' members, people
	// named by the operator, never an agent's or a caller's string.
	ReviewerApprovals *prometheus.CounterVec
	// RubberStamps counts approving votes cast within RubberStampWithin of
	// the round's card being posted on the surface the vote came from.
	RubberStamps prometheus.Counter
	// ShadowAllowed counts human approvals of requests that a shadow rule
	// would have allowed: divided by Decisions{source="human",
	// verdict="approve"}, the share of reviews a candidate rule would save.
	ShadowAllowed prometheus.Counter
}

// NewMetrics registers the service's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Votes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_votes_total", Help: "Reviewers' votes, by verdict and result (decided, counted, repeat).",
		}, []string{"verdict", "result"}),
		PolicyVerdicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_policy_verdicts_total",
			Help: "Rules that matched new intents, by tool, rule, verdict (allow, deny, ask) and shadow (true: recorded only).",
		}, []string{"tool", "rule", "verdict", "shadow"}),
		Decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_decisions_total",
			Help: "Decided rounds, by source (human, policy, grant) and verdict (approve, reject).",
		}, []string{"source", "verdict"}),
		TimeToDecision: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "countersign_time_to_decision_seconds",
			Help: "Time from a round's start (a request's creation for the first) to a human decision.",
			// From a rubber stamp to a decision taken the next morning.
			Buckets: []float64{1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 28800, 86400},
		}),
		ReviewerApprovals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_reviewer_approvals_total",
			Help: "Approving votes, by reviewer (the configured approvers only).",
		}, []string{"reviewer"}),
		RubberStamps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_rubber_stamp_approvals_total",
			Help: "Approving votes cast within 5 s of the round's card being posted (from the round's start where no card was posted).",
		}),
		ShadowAllowed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_shadow_allow_approvals_total",
			Help: "Human approvals of requests that a shadow rule would have allowed.",
		}),
	}
	// Every source and verdict from the start, so a rate reads 0, not no data.
	for _, source := range []string{SourceHuman, SourcePolicy, SourceGrant} {
		for _, v := range []store.Verdict{store.VerdictApprove, store.VerdictReject} {
			m.Decisions.WithLabelValues(source, string(v))
		}
	}
	reg.MustRegister(m.Votes, m.PolicyVerdicts, m.Decisions, m.TimeToDecision, m.ReviewerApprovals, m.RubberStamps, m.ShadowAllowed)
	return m
}

// vote counts one vote that reached an open round.
func (m *Metrics) vote(verdict store.Verdict, o Outcome) {
	if m == nil {
		return
	}
	result := "repeat"
	switch {
	case o.Created:
		result = "decided"
	case o.Counted:
		result = "counted"
	}
	m.Votes.WithLabelValues(string(verdict), result).Inc()
}

// policyEvaluated counts the rule that decided a new intent and every shadow
// rule that matched it.
func (m *Metrics) policyEvaluated(tool string, ev Evaluation) {
	if m == nil {
		return
	}
	m.PolicyVerdicts.WithLabelValues(tool, ev.Policy.TierName, string(ev.Policy.Verdict), "false").Inc()
	for _, sh := range ev.Shadow {
		m.PolicyVerdicts.WithLabelValues(tool, sh.Tier, string(sh.Verdict), "true").Inc()
	}
}
