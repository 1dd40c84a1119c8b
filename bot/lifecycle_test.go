package bot_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store"
)

// execute moves a request's latest execution as the executor would, and
// queues what the executor queues with it.
func (b *bundle) execute(req store.Request, set string, replyReason string) {
	b.t.Helper()
	b.exec(`UPDATE executions SET `+set+`, updated_at = now() WHERE id = (SELECT max(id) FROM executions WHERE request_id = $1)`, req.ID)
	if err := b.store.EnqueueOutbox(b.ctx, store.OutboxUpdateCard, req.ID, req.Round, nil, timeZero); err != nil {
		b.t.Fatal(err)
	}
	if replyReason != "" {
		if err := b.store.EnqueueOutbox(b.ctx, store.OutboxThreadReply, req.ID, req.Round, map[string]any{"reason": replyReason}, timeZero); err != nil {
			b.t.Fatal(err)
		}
	}
}

func TestCardFollowsTheWrite(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	req := b.submit(intent{})
	b.deliver()
	b.click("UANA", billingChan, "approve", decisionValue(req))
	b.deliver()
	if text := blockText(b.card(req.ID, 1)); !strings.Contains(text, "Approved* by <@UANA>") || !strings.Contains(text, "Queued to run") {
		t.Fatalf("approved card: %s", text)
	}

	steps := []struct {
		set, reply, want string
	}{
		{`state = 'claimed', attempts = 1`, "", "Running (attempt 1 of 5)"},
		{`state = 'unknown', last_code = 'gateway_timeout'`, "", "Outcome unknown"},
		{`state = 'ready', last_code = 'rate_limited'`, "", "Retrying under the same key"},
		{`state = 'claimed', attempts = 2`, "", "Running (attempt 2 of 5)"},
		{`state = 'failed', last_code = 'card_declined', last_error = 'the card was declined'`, "failed", "*Failed* `card_declined`: the card was declined"},
	}
	for _, s := range steps {
		b.execute(req, s.set, s.reply)
		b.deliver()
		if text := blockText(b.card(req.ID, 1)); !strings.Contains(text, s.want) {
			t.Fatalf("after %s the card lacks %q:\n%s", s.set, s.want, text)
		}
	}
	c, _ := b.store.CardFor(b.ctx, req.ID, 1, onSlack)
	replies := b.fake.Replies(channelOf(c.Ref), tsOf(c.Ref))
	if len(replies) != 1 || !strings.Contains(replies[0].Text, "<@UANA>") || !strings.Contains(replies[0].Text, "card_declined") {
		t.Fatalf("thread replies = %+v", replies)
	}
	if !c.Settled {
		t.Fatal("a failed card is not settled")
	}
}

func TestSucceededShowsProviderRef(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	req := b.submit(intent{})
	b.deliver()
	b.click("UANA", billingChan, "approve", decisionValue(req))
	b.execute(req, `state = 'succeeded', attempts = 1, provider_ref = 'cr_123', response_status = 200`, "")
	b.deliver()
	if text := blockText(b.card(req.ID, 1)); !strings.Contains(text, "Succeeded* after 1 attempt") || !strings.Contains(text, "`cr_123`") {
		t.Fatalf("succeeded card: %s", text)
	}
}

func TestTerminalCardsHaveNoButtons(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	rejected := b.submit(intent{n: 1})
	cancelled := b.submit(intent{n: 2})
	expired := b.submit(intent{n: 3})
	b.deliver()
	// Its card is up; then its time runs out (a request already past its
	// expiry when its post is delivered gets no card).
	b.exec(`UPDATE requests SET expires_at = now() - interval '1 minute' WHERE id = $1`, expired.ID)
	b.click("UBEN", billingChan, "reject", decisionValue(rejected))
	b.cancel(cancelled)
	if _, err := b.review.ExpireOnce(b.ctx); err != nil {
		t.Fatal(err)
	}
	b.deliver()
	for _, tc := range []struct {
		req  store.Request
		want string
	}{{rejected, "Rejected* by <@UBEN>"}, {cancelled, "Cancelled"}, {expired, "Expired"}} {
		m := b.card(tc.req.ID, 1)
		if ids := m.ActionIDs(); len(ids) != 0 {
			t.Errorf("%s card still has buttons %v", tc.want, ids)
		}
		if !strings.Contains(blockText(m), tc.want) {
			t.Errorf("card lacks %q", tc.want)
		}
	}
}

func TestNeedsReview(t *testing.T) {
	t.Parallel()
	resolver := &fakeResolver{}
	b := setup(t, &options{resolver: resolver})
	b.fake.SetGroup("S0FINANCE", "UCAT")
	req := b.submit(intent{})
	b.deliver()
	b.click("UANA", billingChan, "approve", decisionValue(req))
	b.execute(req, `state = 'needs_review', attempts = 1, last_code = 'weird', last_error = 'the provider answered 418'`, "needs_review")
	b.deliver()

	m := b.card(req.ID, 1)
	if ids := strings.Join(m.ActionIDs(), ","); ids != "mark_succeeded,mark_failed,resend" {
		t.Fatalf("needs-review buttons = %s", ids)
	}
	c, _ := b.store.CardFor(b.ctx, req.ID, 1, onSlack)
	if r := b.fake.Replies(channelOf(c.Ref), tsOf(c.Ref)); len(r) != 1 || !strings.Contains(r[0].Text, "needs review") || !strings.Contains(r[0].Text, "<@UANA>") {
		t.Fatalf("thread replies = %+v", r)
	}
	value := m.ButtonValue("mark_succeeded")
	var v struct {
		R string `json:"r"`
		X int64  `json:"x"`
	}
	if err := json.Unmarshal([]byte(value), &v); err != nil || v.R != req.ID || v.X == 0 {
		t.Fatalf("button value %q", value)
	}

	b.click("UZED", billingChan, "mark_succeeded", value)
	if !hasAny(b.ephemerals("UZED"), "not an approver") || len(resolver.calls) != 0 {
		t.Fatal("a non-approver resolved the write")
	}
	if b.count(`SELECT count(*) FROM events WHERE kind = 'resolution_refused' AND actor = 'UZED'`) != 1 {
		t.Fatal("the refused resolution was not audited")
	}
	b.click("UANA", billingChan, "mark_succeeded", value)
	b.click("UBEN", billingChan, "mark_failed", value)
	if want := fmt.Sprintf("%s/%d/mark_succeeded/UANA", req.ID, v.X); len(resolver.calls) != 1 || resolver.calls[0] != want {
		t.Fatalf("resolutions = %v", resolver.calls)
	}
	if !hasAny(b.ephemerals("UBEN"), "already resolved") {
		t.Fatalf("second resolution answered %q", b.ephemerals("UBEN"))
	}

	// Without a resolver the buttons say so.
	plain := setup(t, nil)
	plain.fake.SetGroup("S0FINANCE")
	plain.click("UANA", billingChan, "resend", value)
	if !hasAny(plain.ephemerals("UANA"), "not available") {
		t.Fatalf("answer without a resolver: %q", plain.ephemerals("UANA"))
	}
}

// The sweep re-renders cards whose last update did not land.
func TestConvergence(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	req := b.submit(intent{})
	other := b.submit(intent{n: 1})
	b.deliver()
	b.click("UANA", billingChan, "approve", decisionValue(req))
	// The update fails for good (the token was deactivated for a while, say).
	b.fake.FailNext("chat.update", bottest.Failure{SlackError: "account_inactive"})
	b.deliver()
	// The executor moves on without an update landing either.
	b.exec(`UPDATE executions SET state = 'succeeded', attempts = 1, provider_ref = 'cr_9' WHERE request_id = $1`, req.ID)
	b.exec(`UPDATE outbox SET created_at = now() - interval '1 hour' WHERE state = 'failed'`)

	n, err := b.bot.ConvergeOnce(b.ctx)
	if err != nil || n != 1 {
		t.Fatalf("converge queued %d (%v), want 1", n, err)
	}
	b.deliver()
	if text := blockText(b.card(req.ID, 1)); !strings.Contains(text, "Succeeded") {
		t.Fatalf("card after convergence: %s", text)
	}
	if n, _ := b.bot.ConvergeOnce(b.ctx); n != 0 {
		t.Fatalf("a converged card was queued again (%d)", n)
	}

	// A card someone deleted is given up on, not updated for ever.
	b.fake.FailNext("chat.update", bottest.Failure{SlackError: "message_not_found"})
	b.click("UANA", billingChan, "reject", decisionValue(other))
	b.deliver()
	b.exec(`UPDATE outbox SET created_at = now() - interval '1 hour' WHERE state = 'failed'`)
	if c, _ := b.store.CardFor(b.ctx, other.ID, 1, onSlack); !c.Settled {
		t.Fatal("a deleted card is still swept")
	}
	if n, _ := b.bot.ConvergeOnce(b.ctx); n != 0 {
		t.Fatalf("a deleted card was queued again (%d)", n)
	}
}

// A superseded round keeps its card, marked superseded, and the new round
// gets its own card; clicks on the old card are stale.
func TestSupersedeGetsANewCard(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	req := b.submit(intent{})
	b.deliver()
	b.click("UANA", billingChan, "approve", decisionValue(req))
	b.deliver()
	// What the executor does on supersede.
	b.exec(`UPDATE executions SET state = 'superseded' WHERE request_id = $1`, req.ID)
	b.exec(`UPDATE requests SET status = 'pending', round = 2, updated_at = now() WHERE id = $1`, req.ID)
	for _, o := range []struct {
		kind  store.OutboxKind
		round int
	}{{store.OutboxUpdateCard, 1}, {store.OutboxPostCard, 2}} {
		if err := b.store.EnqueueOutbox(b.ctx, o.kind, req.ID, o.round, nil, timeZero); err != nil {
			t.Fatal(err)
		}
	}
	b.deliver()

	old, fresh := b.card(req.ID, 1), b.card(req.ID, 2)
	if old.TS == fresh.TS {
		t.Fatal("round 2 has no card of its own")
	}
	if len(old.ActionIDs()) != 0 || !strings.Contains(blockText(old), "Superseded") {
		t.Fatalf("old card: %v %s", old.ActionIDs(), blockText(old))
	}
	if strings.Join(fresh.ActionIDs(), ",") != "approve,reject" {
		t.Fatalf("new card buttons: %v", fresh.ActionIDs())
	}
	if got := b.request(req.ID); tsOf(got.CardRef) != fresh.TS {
		t.Fatalf("the request points at card %s, not the new %s", tsOf(got.CardRef), fresh.TS)
	}
	b.click("UBEN", billingChan, "approve", decisionValue(req)) // round 1's value
	if !hasAny(b.ephemerals("UBEN"), "stale") {
		t.Fatalf("old-card click answered %q", b.ephemerals("UBEN"))
	}
	b.click("UBEN", billingChan, "approve", fresh.ButtonValue("approve"))
	if b.count(`SELECT count(*) FROM decisions WHERE request_id = $1 AND round = 2`, req.ID) != 1 {
		t.Fatal("the new card's approval was not recorded")
	}
}

// A card whose post failed for good is posted again by the sweep once the
// failure is old, and only once.
func TestConvergencePostsAMissingCard(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	b.fake.FailNext("chat.postMessage", bottest.Failure{SlackError: "not_in_channel"})
	req := b.submit(intent{})
	b.deliver()
	if tsOf(b.request(req.ID).CardRef) != "" {
		t.Fatal("a refused post was recorded")
	}
	if n, _ := b.bot.ConvergeOnce(b.ctx); n != 0 {
		t.Fatalf("the sweep re-posted at once (%d)", n)
	}
	// Ten minutes later the bot has been invited to the channel.
	b.exec(`UPDATE outbox SET created_at = now() - interval '11 minutes'`)
	b.exec(`UPDATE requests SET updated_at = now() - interval '11 minutes'`)
	if n, err := b.bot.ConvergeOnce(b.ctx); n != 1 || err != nil {
		t.Fatalf("the sweep queued %d (%v), want 1", n, err)
	}
	b.deliver()
	if got := tsOf(b.request(req.ID).CardRef); got == "" || len(b.fake.Messages(billingChan)) != 1 {
		t.Fatalf("card ts %q, %d cards", got, len(b.fake.Messages(billingChan)))
	}
	if n, _ := b.bot.ConvergeOnce(b.ctx); n != 0 {
		t.Fatalf("a posted card was queued again (%d)", n)
	}
}
