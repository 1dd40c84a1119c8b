package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

func slack(channel string) store.Lane { return store.Lane{Surface: "slack", Destination: channel} }

// testSlackPacing: post slots of a channel come interval apart, a pause
// holds every slot back until it ends, and channels do not share a budget.
func testSlackPacing(t *testing.T, b *Backend) {
	ctx := context.Background()
	const interval = 200 * time.Millisecond
	var delays []time.Duration
	for range 3 {
		d, err := b.TakePostSlot(ctx, slack("C1"), interval)
		if err != nil {
			t.Fatal(err)
		}
		delays = append(delays, d)
	}
	// Three slots taken at once: now, one interval on, two on (less the
	// time the statements took).
	if delays[0] != 0 || delays[1] <= interval/2 || delays[1] > interval || delays[2] <= 3*interval/2 || delays[2] > 2*interval {
		t.Errorf("slots %v, want 0, ~%v, ~%v", delays, interval, 2*interval)
	}
	if d, err := b.TakePostSlot(ctx, slack("C2"), interval); err != nil || d != 0 {
		t.Errorf("another channel's first slot = %v, %v; want now", d, err)
	}
	if d, err := b.LanePause(ctx, slack("C3")); err != nil || d != 0 {
		t.Errorf("an unknown channel's pause = %v, %v; want none", d, err)
	}
	if err := b.PauseLane(ctx, slack("C2"), 2*time.Second); err != nil {
		t.Fatal(err)
	}
	// A shorter pause later does not shorten the longer one.
	if err := b.PauseLane(ctx, slack("C2"), time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if d, err := b.LanePause(ctx, slack("C2")); err != nil || d <= time.Second || d > 2*time.Second {
		t.Errorf("pause = %v, %v; want about 2s", d, err)
	}
	if d, err := b.TakePostSlot(ctx, slack("C2"), interval); err != nil || d <= time.Second {
		t.Errorf("a slot during a pause = %v, %v; want after the pause", d, err)
	}
	if d, err := b.LanePause(ctx, slack("C1")); err != nil || d != 0 {
		t.Errorf("C1's pause = %v, %v; want none (pauses are per channel)", d, err)
	}
	// Lanes are a surface's: another surface's C2 is not paused.
	if d, err := b.LanePause(ctx, store.Lane{Surface: "memory", Destination: "C2"}); err != nil || d != 0 {
		t.Errorf("another surface's C2 pause = %v, %v; want none (pauses are per surface)", d, err)
	}
}
