package bot_test

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/surface"
	"github.com/countersign/countersign/surface/surfacetest"
)

// A tool configured with Slack and a second surface has every card on
// both: the post, each update as the request and its write move, and the
// thread reply when the write fails; each surface's card is recorded
// under its own ref, and the outbox drains with nothing failed.
func TestSecondSurfaceReceivesEveryCard(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		mem := surfacetest.New("memory")
		b := setup(t, &options{driver: drv, surfaces: []surface.Adapter{mem}})
		req := b.submit(intent{})
		b.deliver()
		if n := len(b.fake.Messages(billingChan)); n != 1 {
			t.Fatalf("%d Slack cards, want 1", n)
		}
		sameState := func(when string) surfacetest.Card {
			t.Helper()
			onMemory, ok := mem.Card(req.ID, 1)
			if !ok {
				t.Fatalf("%s: no card on the memory surface", when)
			}
			slackCard, err := b.store.CardFor(b.ctx, req.ID, 1, onSlack)
			if err != nil {
				t.Fatalf("%s: Slack's card: %v", when, err)
			}
			if onMemory.State != slackCard.RenderedState {
				t.Fatalf("%s: the memory card shows %q, Slack's %q", when, onMemory.State, slackCard.RenderedState)
			}
			recorded, err := b.store.CardFor(b.ctx, req.ID, 1, mem.Name())
			if err != nil || recorded.Ref != onMemory.Ref {
				t.Fatalf("%s: the memory card recorded = %+v, %v; want ref %s", when, recorded, err, onMemory.Ref)
			}
			return onMemory
		}
		if c := sameState("posted"); c.State != string(store.RequestPending) {
			t.Fatalf("the posted memory card shows %q", c.State)
		}

		b.click("UANA", billingChan, "approve", decisionValue(req))
		b.deliver()
		if !strings.Contains(blockText(b.card(req.ID, 1)), "Approved* by <@UANA>") {
			t.Fatalf("Slack's card after the approval: %s", blockText(b.card(req.ID, 1)))
		}
		if c := sameState("approved"); !strings.HasPrefix(c.State, "approved/") || c.Updates == 0 {
			t.Fatalf("the memory card after the approval: %+v", c)
		}

		// The write fails, as the executor records it (on either store).
		b.exec(`UPDATE executions SET state = 'failed', last_code = 'card_declined', last_error = 'the card was declined' WHERE request_id = $1`, req.ID)
		for _, o := range []struct {
			kind store.OutboxKind
			data map[string]any
		}{{store.OutboxUpdateCard, nil}, {store.OutboxThreadReply, map[string]any{"reason": "failed"}}} {
			if err := b.store.EnqueueOutbox(b.ctx, o.kind, req.ID, 1, o.data, timeZero); err != nil {
				t.Fatal(err)
			}
		}
		b.deliver()
		c := sameState("failed")
		if c.State != "approved/failed/0" || len(c.Replies) != 1 || c.Replies[0].Reason != "failed" {
			t.Fatalf("the memory card after the failure: %+v", c)
		}
		slackCard, _ := b.store.CardFor(b.ctx, req.ID, 1, onSlack)
		if replies := b.fake.Replies(channelOf(slackCard.Ref), tsOf(slackCard.Ref)); len(replies) != 1 {
			t.Fatalf("%d Slack thread replies, want 1", len(replies))
		}
		if n := b.count(`SELECT count(*) FROM outbox WHERE state = 'failed'`); n != 0 {
			t.Fatalf("%d failed deliveries", n)
		}
		if mem.Cards() != 1 || len(b.fake.Messages(billingChan)) != 1 {
			t.Fatalf("%d memory cards and %d Slack cards, want one each", mem.Cards(), len(b.fake.Messages(billingChan)))
		}
	})
}

// A tool whose surfaces list names one surface has its cards there only:
// a tool on the second surface alone gets no Slack card, one on Slack
// alone no card on the second surface, and a tool that names none both.
func TestToolsCardsGoToTheSurfacesTheyName(t *testing.T) {
	t.Parallel()
	mem := surfacetest.New("memory")
	b := setup(t, &options{surfaces: []surface.Adapter{mem}, tools: map[string]approvals.Tool{
		"memory.only": {Name: "memory.only", Channel: billingChan, Approvers: []string{"UANA"}, RequestTTL: time.Hour, MaxAttempts: 1, Surfaces: []string{"memory"}},
		"slack.only":  {Name: "slack.only", Channel: billingChan, Approvers: []string{"UANA"}, RequestTTL: time.Hour, MaxAttempts: 1, Surfaces: []string{"slack"}},
	}})
	onMemory := b.submit(intent{tool: "memory.only"})
	slackOnly := b.submit(intent{tool: "slack.only", n: 1})
	both := b.submit(intent{n: 2})
	b.deliver()
	if _, ok := mem.Card(onMemory.ID, 1); !ok {
		t.Error("the memory-only tool's card is not on the memory surface")
	}
	if _, ok := mem.Card(slackOnly.ID, 1); ok {
		t.Error("the Slack-only tool's card is on the memory surface")
	}
	if _, ok := mem.Card(both.ID, 1); !ok {
		t.Error("the card of a tool that names no surface is not on the memory surface")
	}
	if n := len(b.fake.Messages(billingChan)); n != 2 {
		t.Errorf("%d Slack cards, want the Slack-only tool's and the default tool's", n)
	}
	if _, err := b.store.CardFor(b.ctx, onMemory.ID, 1, onSlack); err == nil {
		t.Error("the memory-only tool's request has a Slack card recorded")
	}
	if n := b.count(`SELECT count(*) FROM outbox WHERE state = 'failed'`); n != 0 {
		t.Errorf("%d failed deliveries", n)
	}
}
