package main

import (
	"context"
	"testing"
	"time"
)

// TestTinyDay plays a simulated day in a few seconds on two replicas: the
// hourly table has its 24 hours and the drain, traffic follows the curve,
// humans decided, writes were dispatched, Slack was called, and every
// bound held.
func TestTinyDay(t *testing.T) {
	opts := tinyDay
	began := time.Now()
	opts.Log = func(format string, args ...any) {
		t.Logf("%5.1fs "+format, append([]any{time.Since(began).Seconds()}, args...)...)
	}
	rep, err := SimulateDay(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after %s:\n%s", time.Since(began).Round(time.Second), rep.Table())
	if len(rep.Rows) != 25 || rep.Rows[0].Hour != "00:00" || rep.Rows[24].Hour != "drain" {
		t.Fatalf("want 24 hours and the drain, got %d rows", len(rep.Rows))
	}
	var night, afternoon float64
	var decisions, dispatches int
	var slack float64
	for i, h := range rep.Rows {
		switch {
		case i < 6:
			night += h.IntentsPerMin
		case i >= 13 && i < 19:
			afternoon += h.IntentsPerMin
		}
		decisions += h.Decisions
		dispatches += h.Dispatches
		slack += h.SlackPerMin
	}
	if afternoon <= night {
		t.Errorf("the afternoon (%.0f intents/min summed) is no busier than the night (%.0f)", afternoon, night)
	}
	if decisions == 0 || dispatches == 0 || slack == 0 {
		t.Errorf("decisions %d, dispatches %d, Slack calls/min summed %.0f: every one must be above 0", decisions, dispatches, slack)
	}
	if !rep.OK() {
		t.Fatal("a bound is broken (see the table above)")
	}
}
