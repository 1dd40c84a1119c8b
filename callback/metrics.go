package callback

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts callback deliveries.
type Metrics struct {
	// Attempts counts delivery attempts by event and outcome: delivered,
	// retry (the agent answered non-2xx or not at all), failed (the retry
	// window passed) and unconfigured (the agent no longer has a callback).
	Attempts *prometheus.CounterVec
	// Backlog is the number of deliveries waiting, read on every pass.
	Backlog prometheus.Gauge
	// Duration times one POST to an agent, by outcome.
	Duration *prometheus.HistogramVec
}

// NewMetrics registers the callback metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_callback_attempts_total", Help: "Callback delivery attempts, by event and outcome.",
		}, []string{"event", "outcome"}),
		Backlog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "countersign_callback_backlog", Help: "Callback deliveries waiting to be delivered.",
		}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "countersign_callback_duration_seconds", Help: "Callback POSTs to agents, by outcome.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"outcome"}),
	}
	reg.MustRegister(m.Attempts, m.Backlog, m.Duration)
	return m
}
