package approvals

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersign/countersign/store/drivertest"
)

// The pending gauges count each configured tool's pending requests at the
// scrape, 0 for a tool with none, and age the oldest from its round's start.
func TestPendingGauges(t *testing.T) {
	forEachDriver(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, d)
		b.svc.Now = func() time.Time { return time.Now().Add(-time.Hour) }
		b.submit(t, &intentOpts{RunID: ptr("old")})
		b.svc.Now = nil
		b.submit(t, &intentOpts{RunID: ptr("new")})
		decided := b.submit(t, &intentOpts{RunID: ptr("decided")})
		if _, err := b.svc.Decide(b.ctx, approve(decided, approverA)); err != nil {
			t.Fatal(err)
		}

		reg := prometheus.NewRegistry()
		reg.MustRegister(NewPendingCollector(b.svc, slog.New(slog.NewTextHandler(io.Discard, nil))))
		if n := testutil.CollectAndCount(reg); n != 4 {
			t.Fatalf("%d samples, want a count and an age for each of 2 tools", n)
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range families {
			for _, m := range f.GetMetric() {
				got[f.GetName()+"/"+m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
			}
		}
		if got["countersign_pending_requests/billing.credit"] != 2 || got["countersign_pending_requests/deploy.release"] != 0 {
			t.Errorf("pending counts = %v", got)
		}
		if age := got["countersign_pending_oldest_age_seconds/billing.credit"]; age < 3600 || age > 3700 {
			t.Errorf("oldest age = %vs, want about an hour", age)
		}
		if age := got["countersign_pending_oldest_age_seconds/deploy.release"]; age != 0 {
			t.Errorf("oldest age with nothing pending = %v", age)
		}
	})
}
