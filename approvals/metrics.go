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
}

// NewMetrics registers the service's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Votes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_votes_total", Help: "Reviewers' votes, by verdict and result (decided, counted, repeat).",
		}, []string{"verdict", "result"}),
	}
	reg.MustRegister(m.Votes)
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
