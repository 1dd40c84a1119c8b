package hook

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts the hook's traffic.
type Metrics struct {
	Intake       *prometheus.CounterVec   // by outcome: created, replayed, key_reused, pruned, unknown_tool, invalid, unavailable, unauthorized
	HTTPDuration *prometheus.HistogramVec // by route and status code
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
	}
	reg.MustRegister(m.Intake, m.HTTPDuration)
	return m
}
