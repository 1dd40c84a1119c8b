package hook

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts the hook's traffic.
type Metrics struct {
	Intake       *prometheus.CounterVec   // by outcome: created, replayed, key_reused, pruned, unknown_tool, invalid, unavailable, unauthorized
	HTTPDuration *prometheus.HistogramVec // by route and status code
	// TokenUses counts authenticated requests by agent and token (the
	// first 8 hex digits of the token_sha256 that matched), so a rotation
	// can see an old token fall out of use before its hash is removed.
	TokenUses *prometheus.CounterVec
	// Waiting counts the long-polls waiting for a change now: what a
	// replica holds for its waiters.
	Waiting prometheus.Gauge
	// Parked counts those of them whose connection is parked: no
	// goroutine waits for them (parking.go).
	Parked prometheus.Gauge
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
		TokenUses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "countersign_agent_token_requests_total",
			Help: "Authenticated agent API requests, by agent and by the first 8 hex digits of the token_sha256 that matched.",
		}, []string{"agent", "token_sha256"}),
		Waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "countersign_long_polls_waiting", Help: "Long-polls (GET /v1/requests/{ref}?wait=) waiting for a change.",
		}),
		Parked: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "countersign_long_polls_parked", Help: "Waiting long-polls whose connection is parked, with no goroutine.",
		}),
	}
	reg.MustRegister(m.Intake, m.HTTPDuration, m.TokenUses, m.Waiting, m.Parked)
	return m
}
