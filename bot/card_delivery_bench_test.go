package bot_test

import (
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// BenchmarkCardDelivery: the outbox delivered to a fake Slack with pacing
// off, so what is measured is countersign's own cost per card: the claim,
// the view read from the ledger, the Slack call and the recording. 500
// requests' cards are posted, then each request is cancelled and its card
// updated. It reports posts and updates a second and checks every card
// reached the fake. With -short (make test's smoke run) it delivers 20.
func BenchmarkCardDelivery(b *testing.B) {
	n := 500
	if testing.Short() {
		n = 20
	}
	for range b.N {
		b.StopTimer()
		bb := setup(b, &options{dbURL: benchPoolURL(b)})
		reqs := make([]store.Request, n)
		for i := range n {
			reqs[i] = bb.submit(intent{n: i})
		}
		b.StartTimer()
		posts := drainOutbox(b, bb)
		b.StopTimer()
		if got := len(bb.fake.Messages(billingChan)); got != n {
			b.Fatalf("%d cards in the channel, want %d", got, n)
		}
		for _, r := range reqs {
			bb.cancel(r)
		}
		b.StartTimer()
		updates := drainOutbox(b, bb)
		b.StopTimer()
		if got := bb.fake.Count("chat.update"); got < n {
			b.Fatalf("%d card updates, want %d", got, n)
		}
		b.ReportMetric(float64(n)/posts.Seconds(), "posts/s")
		b.ReportMetric(float64(n)/updates.Seconds(), "updates/s")
		b.StartTimer()
	}
}

// drainOutbox runs the delivery worker until no row is pending and says how
// long that took.
func drainOutbox(b *testing.B, bb *bundle) time.Duration {
	start := time.Now()
	deadline := start.Add(5 * time.Minute)
	for bb.pendingOutbox() > 0 {
		if _, err := bb.bot.DeliverOnce(bb.ctx); err != nil {
			b.Fatalf("delivering: %v", err)
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d outbox rows still pending", bb.pendingOutbox())
		}
	}
	return time.Since(start)
}
