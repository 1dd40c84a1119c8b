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
	}
	reg.MustRegister(m.Votes, m.PolicyVerdicts)
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
