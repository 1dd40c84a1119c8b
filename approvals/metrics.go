package approvals

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/countersign/countersign/store"
)

// Metrics counts the hook's traffic.
type Metrics struct {
	Intake       *prometheus.CounterVec   // by outcome: created, replayed, key_reused, unknown_tool, invalid, unavailable, unauthorized
	HTTPDuration *prometheus.HistogramVec // by route and status code
	// Votes counts reviewers' votes by verdict and what each did: decided
	// (the vote that decided its round), counted (recorded, the round still
	// open), repeat (the reviewer had voted in the round already).
	Votes *prometheus.CounterVec
}

// NewMetrics registers the hook's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Intake: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_intake_total", Help: "Intents posted to the hook, by outcome.",
		}, []string{"outcome"}),
		HTTPDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "countersign_http_request_duration_seconds", Help: "Hook requests, by route and status.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 5, 30, 60},
		}, []string{"route", "code"}),
		Votes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_votes_total", Help: "Reviewers' votes, by verdict and result (decided, counted, repeat).",
		}, []string{"verdict", "result"}),
	}
	reg.MustRegister(m.Intake, m.HTTPDuration, m.Votes)
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
