package bot_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/lookup"
)

// Start runs the outbox loop, which posts a queued card without anyone
// calling DeliverOnce; Stop returns once the loop has ended, after which
// new rows wait.
func TestStartDeliversAndStopWaits(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	w := bot.New(bot.Config{Slack: b.slackClient(), Review: b.review, Cards: b.store,
		Lookup: lookup.Service{DB: b.store}, PostInterval: -1, DeliverInterval: 10 * time.Millisecond})
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err == nil {
		t.Error("a second Start was accepted")
	}
	b.submit(intent{})
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for b.fake.Count("chat.postMessage") == 0 || b.pendingOutbox() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the outbox loop posted no card")
		}
		<-tick.C
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := w.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// The loop has ended: a new card waits for whoever delivers next.
	b.submit(intent{n: 1})
	if n := b.pendingOutbox(); n != 1 {
		t.Errorf("%d outbox rows pending after Stop, want 1", n)
	}
}
