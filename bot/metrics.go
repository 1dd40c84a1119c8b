package bot

import "github.com/prometheus/client_golang/prometheus"

// refusedKind labels slash commands refused by slack.lookup_allowed.
const refusedKind = "refused"

// Metrics counts the Slack surface's traffic.
type Metrics struct {
	// Interactions counts clicks and form submissions by outcome: created
	// (decided), counted (a vote short of the policy), repeat, modal_opened
	// (a reject form), a refusal's code, malformed or ignored.
	Interactions *prometheus.CounterVec
	Commands     *prometheus.CounterVec   // by kind of query, or refusedKind
	Deliveries   *prometheus.CounterVec   // by outbox kind and outcome
	Converged    prometheus.Counter       // deliveries queued by the sweep
	Nudges       *prometheus.CounterVec   // reminders and escalations posted, by kind
	AckDuration  *prometheus.HistogramVec // by route
}

// NewMetrics registers the Slack surface's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := newMetrics()
	reg.MustRegister(m.Interactions, m.Commands, m.Deliveries, m.Converged, m.AckDuration, m.Nudges)
	return m
}

func newMetrics() *Metrics {
	return &Metrics{
		Interactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_slack_interactions_total", Help: "Slack button clicks and form submissions, by outcome.",
		}, []string{"outcome"}),
		Commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_slack_commands_total", Help: "Slash commands, by kind of query (refused: not in slack.lookup_allowed).",
		}, []string{"kind"}),
		Deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_slack_deliveries_total", Help: "Outbox delivery attempts, by kind and outcome.",
		}, []string{"kind", "outcome"}),
		Converged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "countersign_slack_cards_converged_total", Help: "Card deliveries queued by the convergence sweep.",
		}),
		Nudges: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_slack_nudges_sent_total", Help: "Reminders and escalations posted in card threads, by kind.",
		}, []string{"kind"}),
		AckDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "countersign_slack_ack_seconds", Help: "Time to answer Slack, by route.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .09, .25, .5, 1, 3},
		}, []string{"route"}),
	}
}
