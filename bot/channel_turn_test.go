package bot_test

import (
	"testing"
	"time"

	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store/drivertest"
)

// A channel with a deep queue of cards does not hold the others: a round of
// DeliverOnce posts what the busy channel's pace allows in a few seconds and
// gives the rest back, so a card queued for another channel meanwhile is
// posted in the next round, not after the whole queue.
func TestBusyChannelDoesNotHoldTheOthers(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		const interval = 200 * time.Millisecond // 15 posts in a turn of 3 s
		w := bot.New(bot.Config{Slack: b.slackClient(), Review: b.review, Cards: b.store, Lookup: lookup.Service{DB: b.store},
			PostInterval: interval})
		const busy = 30
		for i := range busy {
			b.submit(intent{n: i})
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			deadline := time.Now().Add(60 * time.Second)
			for b.pendingOutbox() > 0 && time.Now().Before(deadline) {
				if _, err := w.DeliverOnce(b.ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		// Once the busy channel's first round is under way, a card for
		// another channel is queued.
		deadline := time.Now().Add(30 * time.Second)
		for len(b.fake.Messages(billingChan)) == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		b.submit(intent{tool: "notes.add", n: busy})
		<-done

		var billing, notesAt int
		for _, c := range b.fake.Calls("chat.postMessage") {
			switch c.Form.Get("channel") {
			case billingChan:
				billing++
			case notesChan:
				notesAt = billing
			}
		}
		if billing != busy || len(b.fake.Messages(notesChan)) != 1 {
			t.Fatalf("%d cards in the busy channel (want %d), %d in the other (want 1)", billing, busy, len(b.fake.Messages(notesChan)))
		}
		if notesAt > 20 {
			t.Errorf("the other channel's card was posted after %d of the busy channel's %d: it waited for the busy queue", notesAt, busy)
		}
	})
}
