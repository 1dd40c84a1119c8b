package bot_test

import (
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// withNudges gives billing.credit a reminder after 30m and an escalation to
// S0ONCALL after 2h.
func (b *bundle) withNudges(addsApprovers bool) {
	tool := b.review.Tools["billing.credit"]
	tool.RemindAfter, tool.EscalateAfter, tool.EscalateTo = 30*time.Minute, 2*time.Hour, []string{"S0ONCALL"}
	tool.EscalateAddsApprovers = addsApprovers
	b.review.Tools["billing.credit"] = tool
}

// nudgeAt runs the sweep as if it were later by ahead, and returns how many
// nudges it queued.
func (b *bundle) nudgeAt(ahead time.Duration) int {
	b.t.Helper()
	b.review.Now = func() time.Time { return time.Now().Add(ahead) }
	defer func() { b.review.Now = nil }()
	n, err := b.review.NudgeOnce(b.ctx)
	if err != nil {
		b.t.Fatalf("NudgeOnce: %v", err)
	}
	return n
}

func (b *bundle) replies(req store.Request) []bottest.Message {
	b.t.Helper()
	c, err := b.store.CardFor(b.ctx, req.ID, req.Round, onSlack)
	if err != nil {
		b.t.Fatal(err)
	}
	return b.fake.Replies(channelOf(c.Ref), tsOf(c.Ref))
}

// A pending request gets one reminder naming the approvers (not the person
// it is for) once its round has waited remind_after, and one escalation
// naming escalate_to after escalate_after, each in the card's thread, each
// once however often the sweep runs; both show in the lookup's timeline.
func TestRemindThenEscalateInTheCardThread(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		b.withNudges(false)
		req := b.submit(intent{requestedFor: "UBEN"})
		if n := b.nudgeAt(time.Hour); n != 0 {
			t.Fatalf("queued %d nudges before the card was posted", n)
		}
		b.deliver()
		if n := b.nudgeAt(10 * time.Minute); n != 0 {
			t.Fatalf("queued %d nudges after 10m", n)
		}
		if n := b.nudgeAt(45 * time.Minute); n != 1 {
			t.Fatalf("queued %d nudges after 45m, want the reminder", n)
		}
		if n := b.nudgeAt(50 * time.Minute); n != 0 {
			t.Fatalf("queued %d more nudges after 50m", n)
		}
		b.deliver()
		replies := b.replies(req)
		if len(replies) != 1 {
			t.Fatalf("%d replies, want the reminder", len(replies))
		}
		text := replies[0].Text
		if !strings.HasPrefix(text, "Reminder: <@UANA> <!subteam^S0FINANCE>,") || strings.Contains(text, "UBEN") ||
			!strings.Contains(text, "waited over 30m for a decision") || !strings.Contains(text, approvals.ShortKey(req.Key)) {
			t.Errorf("reminder = %q", text)
		}
		if !strings.Contains(string(replies[0].Metadata), `"countersign_reply"`) {
			t.Errorf("reminder metadata = %s", replies[0].Metadata)
		}

		if n := b.nudgeAt(3 * time.Hour); n != 1 {
			t.Fatalf("queued %d nudges after 3h, want the escalation", n)
		}
		if n := b.nudgeAt(5 * time.Hour); n != 0 {
			t.Fatalf("queued %d more nudges after 5h", n)
		}
		b.deliver()
		replies = b.replies(req)
		if len(replies) != 2 || !strings.HasPrefix(replies[1].Text, "Escalation: <!subteam^S0ONCALL>,") ||
			!strings.Contains(replies[1].Text, "please review it") {
			t.Fatalf("replies = %+v", replies)
		}

		lookup := b.command("UANA", req.Key[:11])
		if !strings.Contains(lookup, "reminded by system") || !strings.Contains(lookup, "escalated by system") ||
			!strings.Contains(lookup, "S0ONCALL") {
			t.Errorf("the lookup's timeline lacks the nudges:\n%s", lookup)
		}
	})
}

// Nothing is queued for a request decided before the sweep, and a nudge
// queued before a decision is not posted after it.
func TestNoNudgeOnceDecided(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		b.withNudges(false)
		early := b.submit(intent{n: 1})
		late := b.submit(intent{n: 2})
		b.deliver()
		b.click("UANA", billingChan, "approve", decisionValue(early))
		if n := b.nudgeAt(45 * time.Minute); n != 1 {
			t.Fatalf("queued %d reminders, want one (for the request still pending)", n)
		}
		b.click("UANA", billingChan, "reject", decisionValue(late))
		b.deliver()
		for _, req := range []store.Request{early, late} {
			if got := b.replies(b.request(req.ID)); len(got) != 0 {
				t.Errorf("request %d: replies %+v, want none", req.Round, got)
			}
		}
		if n := b.count(`SELECT count(*) FROM outbox WHERE state = 'delivered' AND last_error LIKE 'no longer pending%'`); n != 1 {
			t.Errorf("%d reminders dropped as no longer pending, want 1", n)
		}
	})
}

// A reply whose post landed while its answer was lost is found in the
// thread by its metadata on the next attempt, not posted twice.
func TestReplyWithUnknownOutcomeIsPostedOnce(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv, lease: 50 * time.Millisecond})
		b.withNudges(false)
		req := b.submit(intent{})
		b.deliver()
		if n := b.nudgeAt(45 * time.Minute); n != 1 {
			t.Fatalf("queued %d reminders", n)
		}
		b.fake.FailNext("chat.postMessage", bottestLanded())
		b.deliver()
		if n := len(b.replies(req)); n != 1 {
			t.Fatalf("%d reminders in the thread, want 1", n)
		}
		if n := b.fake.Count("conversations.replies"); n != 1 {
			t.Errorf("conversations.replies calls = %d, want 1 (the retry looked)", n)
		}
		if n := b.count(`SELECT count(*) FROM outbox WHERE state = 'delivered' AND last_error = 'reply found in the thread'`); n != 1 {
			t.Errorf("rows delivered by finding the reply = %d, want 1", n)
		}
	})
}

// A reminder whose post landed while its answer was lost, and whose request
// is decided before the retry, is recorded as posted (found in the thread),
// not as "no longer pending": the retry looks in the thread first.
func TestReplyLandedBeforeTheDecisionIsRecordedAsPosted(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv, lease: 50 * time.Millisecond})
		b.withNudges(false)
		req := b.submit(intent{})
		b.deliver()
		if n := b.nudgeAt(45 * time.Minute); n != 1 {
			t.Fatalf("queued %d reminders", n)
		}
		b.fake.FailNext("chat.postMessage", bottestLanded())
		if _, err := b.bot.DeliverOnce(b.ctx); err != nil {
			t.Fatal(err)
		}
		if n := len(b.replies(req)); n != 1 {
			t.Fatalf("%d reminders in the thread after the lost answer, want 1", n)
		}
		b.click("UANA", billingChan, "approve", decisionValue(req))
		time.Sleep(60 * time.Millisecond) // the lost attempt's lease runs out
		b.deliver()
		if n := len(b.replies(req)); n != 1 {
			t.Errorf("%d reminders in the thread, want 1", n)
		}
		if n := b.count(`SELECT count(*) FROM outbox WHERE state = 'delivered' AND last_error = 'reply found in the thread'`); n != 1 {
			t.Errorf("rows recorded as found in the thread = %d, want 1", n)
		}
		if n := b.count(`SELECT count(*) FROM outbox WHERE last_error LIKE 'no longer pending%'`); n != 0 {
			t.Errorf("%d reminders recorded as not sent, though their post is in the thread", n)
		}
	})
}

// With escalate_adds_approvers, the people escalated to may decide the
// round once it is escalated, and not before.
func TestEscalationAddsApprovers(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		b.withNudges(true)
		b.fake.SetGroup("S0FINANCE", "UCAT")
		b.fake.SetGroup("S0ONCALL", "UOPS")
		req := b.submit(intent{})
		b.deliver()
		b.click("UOPS", billingChan, "approve", decisionValue(req))
		if got := b.request(req.ID); got.Status != store.RequestPending {
			t.Fatalf("approved by UOPS before the escalation: %s", got.Status)
		}
		if !hasAny(b.ephemerals("UOPS"), "You are not an approver") {
			t.Errorf("UOPS was not told: %q", b.ephemerals("UOPS"))
		}
		if n := b.nudgeAt(3 * time.Hour); n != 2 {
			t.Fatalf("queued %d nudges, want a reminder and an escalation", n)
		}
		b.deliver()
		if replies := b.replies(req); len(replies) != 2 || !strings.Contains(replies[1].Text, "you may now approve or reject it") {
			t.Fatalf("replies = %+v", replies)
		}
		b.click("UOPS", billingChan, "approve", decisionValue(req))
		got := b.request(req.ID)
		if got.Status != store.RequestApproved {
			t.Fatalf("after the escalation UOPS's approval left the request %s", got.Status)
		}
		if d, err := b.store.DecisionFor(b.ctx, req.ID, 1); err != nil || d.DecidedBy != "UOPS" {
			t.Fatalf("decision = %+v, %v", d, err)
		}
	})
}

// A reminder on a round that has votes mentions only the approvers who have
// not voted.
func TestReminderLeavesOutWhoHasVoted(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		tool := b.review.Tools["billing.quorum"]
		tool.RemindAfter = 30 * time.Minute
		b.review.Tools["billing.quorum"] = tool
		req := b.submit(intent{tool: "billing.quorum"})
		b.deliver()
		b.click("UANA", billingChan, "approve", decisionValue(req))
		if n := b.nudgeAt(45 * time.Minute); n != 1 {
			t.Fatalf("queued %d nudges after 45m, want the reminder", n)
		}
		b.deliver()
		replies := b.replies(req)
		if len(replies) != 1 {
			t.Fatalf("%d replies, want the reminder", len(replies))
		}
		text := replies[0].Text
		if strings.Contains(text, "UANA") || !strings.Contains(text, "<@UBEN>") || !strings.Contains(text, "<@UCAT>") {
			t.Errorf("reminder after UANA's vote = %q", text)
		}
	})
}
