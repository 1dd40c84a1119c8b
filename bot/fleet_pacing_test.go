package bot_test

import (
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store/drivertest"
)

// Two bots (two replicas) on one database share a channel's budget: their
// posts to it, together, come an interval apart, and a 429 one of them
// meets pauses both for its Retry-After. Every card is posted once.
func TestTwoBotsShareAChannelsBudget(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		const interval = 300 * time.Millisecond
		newBot := func() *bot.Bot {
			return bot.New(bot.Config{Slack: b.slackClient(), Review: b.review, Cards: b.store, Lookup: lookup.Service{DB: b.store},
				PostInterval: interval})
		}
		fleet := []*bot.Bot{newBot(), newBot()}
		const n = 6
		for i := range n {
			b.submit(intent{n: i})
		}
		b.fake.FailNext("chat.postMessage", bottest.Failure{Status: 429, RetryAfter: "1"})
		var wg sync.WaitGroup
		deadline := time.Now().Add(60 * time.Second)
		for _, w := range fleet {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b.pendingOutbox() > 0 && time.Now().Before(deadline) {
					if _, err := w.DeliverOnce(b.ctx); err != nil {
						t.Error(err)
						return
					}
					time.Sleep(20 * time.Millisecond)
				}
			}()
		}
		wg.Wait()

		if got := len(b.fake.Messages(billingChan)); got != n {
			t.Fatalf("%d cards in the channel, want %d", got, n)
		}
		calls := b.fake.Calls("chat.postMessage")
		if len(calls) != n+1 {
			t.Errorf("%d posts, want %d and the one refused", len(calls), n+1)
		}
		// The first call was refused with Retry-After: 1; nobody posts to
		// the channel for that second, then posts come an interval apart.
		// Gaps are seen where Slack receives the posts, so a post delayed
		// between taking its slot and arriving shortens the next gap: allow
		// half an interval of that (unpaced posts would come ~0 ms apart).
		for i := 1; i < len(calls); i++ {
			gap := calls[i].At.Sub(calls[i-1].At)
			want := interval / 2
			if i == 1 {
				want = time.Second - interval/2
			}
			if gap < want {
				t.Errorf("post %d came %v after the one before, want at least %v", i, gap.Round(time.Millisecond), want)
			}
		}
	})
}
