package executor_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store/drivertest"
)

func TestMetricsCountAttemptsAndExecutions(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		reg := prometheus.NewRegistry()
		m := executor.NewMetrics(reg)
		b := setup(t, &options{driver: d, config: func(c *executor.Config) { c.Metrics = m }})
		ok := b.approve(t)
		flaky := b.approve(t)
		declined := b.approve(t)
		review := b.approve(t)
		b.provider.SetFor(flaky.Key, providertest.Behavior{Status: 429, Times: 1})
		b.provider.SetFor(declined.Key, providertest.Behavior{Status: 402, Code: "card_declined"})
		b.provider.SetFor(review.Key, providertest.Behavior{Status: 504})
		b.dispatch(t)
		b.dispatch(t)
		b.reconcile(t) // 504 → verified not done → ready
		b.provider.SetFor(review.Key, providertest.Behavior{Status: 501})
		b.dispatch(t)
		b.reconcile(t)
		wantObjects(t, b.provider, ok.Key, 1)

		for _, c := range []struct {
			vec           *prometheus.CounterVec
			outcome, code string
			want          float64
		}{
			{m.Attempts, "succeeded", "none", 2},
			{m.Attempts, "retry", "http_429", 1},
			{m.Attempts, "fatal", "card_declined", 1},
			{m.Attempts, "verify", "http_504", 1},
			{m.Attempts, "review", "other", 1},
			{m.Executions, "succeeded", "none", 2},
			{m.Executions, "failed", "card_declined", 1},
			{m.Executions, "needs_review", "other", 1},
		} {
			if got := testutil.ToFloat64(c.vec.WithLabelValues(c.outcome, c.code)); got != c.want {
				t.Errorf("%s/%s = %v, want %v", c.outcome, c.code, got, c.want)
			}
		}
		if got := testutil.ToFloat64(m.NeedsReview); got != 1 {
			t.Errorf("needs_review gauge %v", got)
		}
		if n, err := testutil.GatherAndCount(reg); err != nil || n == 0 {
			t.Fatalf("gathering: %d %v", n, err)
		}
	})
}
