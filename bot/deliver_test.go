package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/lookup"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

func TestPostCard(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		req := b.submit(intent{requestedFor: "UREQ"})
		b.deliver()

		if n := b.fake.Count("chat.postMessage"); n != 1 {
			t.Fatalf("chat.postMessage calls = %d, want 1", n)
		}
		stored := b.request(req.ID)
		if channelOf(stored.CardRef) != billingChan || tsOf(stored.CardRef) == "" {
			t.Fatalf("card not recorded on the request: %q %q", channelOf(stored.CardRef), tsOf(stored.CardRef))
		}
		m := b.card(req.ID, 1)
		var md struct {
			EventType    string         `json:"event_type"`
			EventPayload map[string]any `json:"event_payload"`
		}
		if err := json.Unmarshal(m.Metadata, &md); err != nil {
			t.Fatalf("metadata: %v", err)
		}
		if md.EventType != "countersign_card" || md.EventPayload["key"] != req.Key || md.EventPayload["round"] != float64(1) {
			t.Fatalf("metadata = %+v", md)
		}
		if ids := m.ActionIDs(); strings.Join(ids, ",") != "approve,reject" {
			t.Fatalf("buttons = %v", ids)
		}
		text := blockText(m)
		for _, want := range []string{
			req.Key[:12] + "…" + req.Key[len(req.Key)-4:], req.PayloadHash, "```", `"invoice": "inv_8841"`,
			"<@UREQ>", "billing-agent", "cannot be undone", "customer reported a duplicate charge", "<!date^",
			"Approve an irreversible write?",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("card lacks %q", want)
			}
		}
		var value struct {
			R string `json:"r"`
			N int    `json:"n"`
			H string `json:"h"`
		}
		if err := json.Unmarshal([]byte(m.ButtonValue("approve")), &value); err != nil || value.R != req.ID || value.N != 1 || value.H != req.PayloadHash {
			t.Fatalf("approve value = %+v (%v)", value, err)
		}

		// A reversible tool asks for no confirmation.
		notes := b.submit(intent{tool: "notes.add"})
		b.deliver()
		if strings.Contains(blockText(b.card(notes.ID, 1)), "Approve an irreversible write?") {
			t.Error("a reversible tool's approve button asks for confirmation")
		}
	})
}

func TestLongEffectIsCutWithTheRestReachable(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		lines := make([]string, 0, 300)
		for i := range 300 {
			lines = append(lines, fmt.Sprintf(`"line_%03d":"a value that is long enough <to> & matter"`, i))
		}
		req := b.submit(intent{effect: "{" + strings.Join(lines, ",") + "}"})
		b.deliver()
		m := b.card(req.ID, 1)
		for _, text := range sectionTexts(m) {
			if len(text) > 3000 {
				t.Fatalf("a section has %d characters, over Slack's 3000", len(text))
			}
		}
		text := blockText(m)
		if !strings.Contains(text, "/countersign "+req.Key) || !strings.Contains(text, "line_000") || strings.Contains(text, "line_299") {
			t.Fatal("the effect is not cut with a way to see the rest")
		}
		if strings.Contains(text, "<to>") || !strings.Contains(text, "&lt;to&gt; &amp; matter") {
			t.Fatal("agent text is not escaped for mrkdwn")
		}
		// The lookup shows the whole request.
		if got := b.command("UANA", req.Key); !strings.Contains(got, req.Key) {
			t.Fatalf("lookup of a cut card: %s", got)
		}
	})
}

// blockText is every text in a card's blocks, decoded.
func blockText(m bottest.Message) string {
	var v any
	_ = json.Unmarshal(m.Blocks, &v)
	var sb strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "text" {
					sb.WriteString(s + "\n")
				} else {
					walk(x)
				}
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return sb.String()
}

func sectionTexts(m bottest.Message) []string {
	var blocks []struct {
		Text *struct {
			Text string `json:"text"`
		} `json:"text"`
	}
	_ = json.Unmarshal(m.Blocks, &blocks)
	var out []string
	for _, b := range blocks {
		if b.Text != nil {
			out = append(out, b.Text.Text)
		}
	}
	return out
}

// A post that lands while the worker never learns its ts (a 500 after the
// message is stored) is found by its metadata before posting again.
func TestUnknownPostOutcomeLeavesOneCard(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		b.fake.FailNext("chat.postMessage", bottest.Failure{Status: 500, Land: true})
		req := b.submit(intent{})
		b.deliver()

		if n := b.fake.Count("chat.postMessage"); n != 1 {
			t.Fatalf("chat.postMessage calls = %d, want 1", n)
		}
		if n := b.fake.Count("conversations.history"); n < 1 {
			t.Fatal("the worker did not look for its card before posting again")
		}
		if msgs := b.fake.Messages(billingChan); len(msgs) != 1 {
			t.Fatalf("%d cards in the channel, want 1", len(msgs))
		}
		if got, want := tsOf(b.request(req.ID).CardRef), b.fake.Messages(billingChan)[0].TS; got != want {
			t.Fatalf("recorded ts %q, card ts %q", got, want)
		}
	})
}

// A crash between the post and recording its ts: the worker's context ends
// right after Slack stored the card, so nothing is recorded; once the lease
// runs out a fresh worker finds the card by its metadata and does not post
// again.
func TestCrashBetweenPostAndRecordLeavesOneCard(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv, lease: 300 * time.Millisecond})
		req := b.submit(intent{})

		crashCtx, crash := context.WithCancel(context.Background())
		b.fake.AfterPost(func(bottest.Message) { crash() })
		if _, err := b.bot.DeliverOnce(crashCtx); err != nil {
			t.Fatal(err)
		}
		b.fake.AfterPost(nil)
		if got := tsOf(b.request(req.ID).CardRef); got != "" {
			t.Fatalf("the crashed worker recorded ts %q", got)
		}
		if n := len(b.fake.Messages(billingChan)); n != 1 {
			t.Fatalf("%d messages after the crash, want 1", n)
		}

		b.deliver() // a fresh worker, after the lease
		if n := b.fake.Count("chat.postMessage"); n != 1 {
			t.Fatalf("chat.postMessage calls = %d, want 1", n)
		}
		if msgs := b.fake.Messages(billingChan); len(msgs) != 1 || tsOf(b.request(req.ID).CardRef) != msgs[0].TS {
			t.Fatalf("cards = %d, recorded ts %q", len(msgs), tsOf(b.request(req.ID).CardRef))
		}
	})
}

// A 429 storm delays deliveries but loses none and duplicates none.
func TestRateLimitStormLosesNothing(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		const n = 40
		var reqs []store.Request
		for i := range n {
			reqs = append(reqs, b.submit(intent{n: i}))
		}
		b.fake.RateLimitFor("chat.postMessage", 2*time.Second)
		start := time.Now()
		b.deliver()
		if time.Since(start) < time.Second {
			t.Fatal("deliveries did not wait for the rate limit")
		}
		if got := len(b.fake.Messages(billingChan)); got != n {
			t.Fatalf("%d cards, want %d", got, n)
		}
		seen := map[string]bool{}
		for _, r := range reqs {
			ts := tsOf(b.request(r.ID).CardRef)
			if ts == "" || seen[ts] {
				t.Fatalf("request %s has card ts %q (duplicate or missing)", r.Key, ts)
			}
			seen[ts] = true
		}
		if b.count(`SELECT count(*) FROM outbox WHERE state <> 'delivered'`) != 0 {
			t.Fatal("some deliveries did not land")
		}
		if b.fake.Count("chat.postMessage") <= n {
			t.Fatal("the storm never answered 429")
		}
	})
}

func TestTransientErrorIsRetried(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		b.fake.FailNext("chat.postMessage", bottest.Failure{Status: 503}, bottest.Failure{SlackError: "internal_error"})
		req := b.submit(intent{})
		b.deliver()
		if got := tsOf(b.request(req.ID).CardRef); got == "" {
			t.Fatal("the card was not posted after transient errors")
		}
		if n := len(b.fake.Messages(billingChan)); n != 1 {
			t.Fatalf("%d cards, want 1", n)
		}
	})
}

func TestPermanentErrorIsRecorded(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.fake.FailNext("chat.postMessage", bottest.Failure{SlackError: "channel_not_found"})
	req := b.submit(intent{})
	b.deliver()
	var state, lastErr string
	if err := b.db.Pool.QueryRow(b.ctx, `SELECT state, last_error FROM outbox WHERE request_id = $1`, req.ID).Scan(&state, &lastErr); err != nil {
		t.Fatal(err)
	}
	if state != "failed" || !strings.Contains(lastErr, "channel_not_found") {
		t.Fatalf("outbox row is %s (%q), want failed with channel_not_found", state, lastErr)
	}
	if b.fake.Count("chat.postMessage") != 1 {
		t.Fatal("a permanent error was retried")
	}
}

func TestUpdateWaitsForItsCard(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		req := b.submit(intent{})
		// Decide before the card is posted: the update must not be lost, and the
		// posted card must end up showing the decision.
		if status := b.click("UANA", billingChan, "approve", decisionValue(req)); status != 200 {
			t.Fatalf("click status %d", status)
		}
		b.deliver()
		if ids := b.card(req.ID, 1).ActionIDs(); len(ids) != 0 {
			t.Fatalf("the card still has buttons %v after approval", ids)
		}
		if !strings.Contains(blockText(b.card(req.ID, 1)), "Approved") {
			t.Fatal("the card does not show the approval")
		}
	})
}

func decisionValue(r store.Request) string {
	v, _ := json.Marshal(map[string]any{"r": r.ID, "n": r.Round, "h": r.PayloadHash})
	return string(v)
}

// Agent-written text cannot mention anyone or link anywhere on the card or
// in its notification (plain_text, such as the header, is never parsed).
func TestAgentTextIsInert(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		req := b.submit(intent{invoice: "<!channel> <https://evil.example|click>"})
		b.deliver()
		m := b.card(req.ID, 1)
		for _, text := range append(mrkdwnTexts(m), m.Text) {
			if strings.Contains(text, "<!channel>") || strings.Contains(text, "<https://evil") {
				t.Fatalf("agent text is live:\n%s", text)
			}
		}
		if !strings.Contains(m.Text, "&lt;!channel&gt;") {
			t.Fatalf("notification text: %q", m.Text)
		}
	})
}

// mrkdwnTexts is every mrkdwn text object in a card's blocks.
func mrkdwnTexts(m bottest.Message) []string {
	var v any
	_ = json.Unmarshal(m.Blocks, &v)
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if v["type"] == "mrkdwn" {
				if s, ok := v["text"].(string); ok {
					out = append(out, s)
				}
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(v)
	return out
}

// Two workers (two replicas) draining one outbox post each card once.
func TestTwoWorkersPostEachCardOnce(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		other := bot.New(bot.Config{Slack: b.slackClient(), Review: b.review, Cards: b.store, Lookup: lookup.Service{DB: b.store}, PostInterval: -1})
		const n = 60
		for i := range n {
			b.submit(intent{n: i})
		}
		var wg sync.WaitGroup
		for _, w := range []*bot.Bot{b.bot, other} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for b.pendingOutbox() > 0 {
					if _, err := w.DeliverOnce(b.ctx); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if got := b.fake.Count("chat.postMessage"); got != n {
			t.Fatalf("%d posts for %d cards", got, n)
		}
		if got := b.count(`SELECT count(*) FROM cards`); got != n {
			t.Fatalf("%d cards recorded, want %d", got, n)
		}
	})
}

// When another worker recorded a card for the round first, the later post is
// taken back, so one card stays live.
func TestDuplicatePostIsTakenBack(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	req := b.submit(intent{})
	b.fake.AfterPost(func(m bottest.Message) {
		// Another replica's card for the round is recorded while this post is in flight.
		b.exec(`INSERT INTO cards (request_id, round, surface, ref) VALUES ($1, 1, 'slack', $2 || '/1.000001')`, req.ID, billingChan)
	})
	b.deliver()
	if n := b.fake.Count("chat.delete"); n != 1 {
		t.Fatalf("chat.delete calls = %d, want 1", n)
	}
	if msgs := b.fake.Messages(billingChan); len(msgs) != 0 {
		t.Fatalf("%d cards left from this worker, want 0 (the other replica's stands)", len(msgs))
	}
	if c, _ := b.store.CardFor(b.ctx, req.ID, 1, onSlack); tsOf(c.Ref) != "1.000001" {
		t.Fatalf("the card that stands is %q", tsOf(c.Ref))
	}
}
