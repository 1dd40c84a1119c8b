package bot_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/bot"
	"github.com/countersign/countersign/bot/bottest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// cardText is every text of a card, joined.
func cardText(m bottest.Message) string { return string(m.Blocks) }

// A 2-of-N tool through the real handlers: the first approval is counted
// and shown, the same approver's second click changes nothing, and the
// second approver's click decides, once.
func TestTwoOfNDecidesOnTheSecondDistinctApprover(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		req := b.submit(intent{tool: "billing.quorum"})
		b.deliver()
		if !strings.Contains(cardText(b.card(req.ID, 1)), "needs 2 approvals from") {
			t.Errorf("card lacks the policy: %s", cardText(b.card(req.ID, 1)))
		}
		b.click("UANA", billingChan, bot.ActionApprove, decisionValue(req))
		if got := b.ephemerals("UANA"); !hasAny(got, "1 of 2 approvals: waiting for one more approver") {
			t.Fatalf("first approver's answer = %q", got)
		}
		b.deliver()
		card := cardText(b.card(req.ID, 1))
		if !strings.Contains(card, `1 of 2 approvals: \u003c@UANA\u003e`) {
			t.Errorf("card after one vote lacks the votes so far: %s", card)
		}
		if !strings.Contains(card, "May still act") || strings.Contains(card, "May still act: \\u003c@UANA") {
			t.Errorf("card after one vote: who may still act is wrong: %s", card)
		}
		if ids := b.card(req.ID, 1).ActionIDs(); len(ids) != 2 {
			t.Errorf("card after one vote has buttons %v", ids)
		}

		b.click("UANA", billingChan, bot.ActionApprove, decisionValue(req))
		if got := b.ephemerals("UANA"); !hasAny(got, "You already approved") || !hasAny(got[1:], "1 of 2 approvals") {
			t.Fatalf("repeated click's answer = %q", got)
		}
		if got := b.count(`SELECT count(*) FROM votes`); got != 1 {
			t.Fatalf("votes after a repeated click = %d, want 1", got)
		}
		if got := b.request(req.ID).Status; got != store.RequestPending {
			t.Fatalf("status after one approval = %s", got)
		}

		b.click("UBEN", billingChan, bot.ActionApprove, decisionValue(req))
		if got := b.ephemerals("UBEN"); !hasAny(got, "You approved") {
			t.Fatalf("second approver's answer = %q", got)
		}
		if got := b.request(req.ID).Status; got != store.RequestApproved {
			t.Fatalf("status after two approvals = %s", got)
		}
		if got := b.count(`SELECT count(*) FROM decisions`); got != 1 {
			t.Fatalf("decisions = %d", got)
		}
		if got := b.count(`SELECT count(*) FROM executions`); got != 1 {
			t.Fatalf("executions = %d", got)
		}
		b.click("UCAT", billingChan, bot.ActionApprove, decisionValue(req))
		if got := b.ephemerals("UCAT"); !hasAny(got, "Already approved by") {
			t.Fatalf("late approver's answer = %q", got)
		}
		b.deliver()
		card = cardText(b.card(req.ID, 1))
		if !strings.Contains(card, "2 of 2 approvals") || len(b.card(req.ID, 1).ActionIDs()) != 0 {
			t.Errorf("decided card = %s", card)
		}
	})
}

// An approve and a reject racing on one request leave exactly one
// decision, on a one-approval tool and on a 2-of-N tool.
func TestApproveRejectRaceLeavesOneDecision(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		const n = 20
		for i := range n {
			tool := "billing.credit"
			voters := []string{"UANA", "UBEN"}
			if i%2 == 1 {
				tool, voters = "billing.strict", []string{"UANA", "UBEN"}
				if i%4 == 3 {
					tool, voters = "billing.quorum", []string{"UANA", "UBEN", "UCAT"}
				}
			}
			req := b.submit(intent{tool: tool, n: i})
			var wg sync.WaitGroup
			for j, user := range voters {
				action := bot.ActionApprove
				if j == len(voters)-1 {
					action = bot.ActionReject
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					if status := b.click(user, billingChan, action, decisionValue(req)); status != http.StatusOK {
						t.Errorf("click status %d", status)
					}
				}()
			}
			wg.Wait()
			if tool == "billing.credit" || tool == "billing.quorum" {
				if got := b.count(fmt.Sprintf(`SELECT count(*) FROM decisions WHERE request_id = '%s'`, req.ID)); got != 1 {
					t.Fatalf("%s: %d decisions, want 1", tool, got)
				}
			}
			st := b.request(req.ID).Status
			execs := b.count(fmt.Sprintf(`SELECT count(*) FROM executions WHERE request_id = '%s'`, req.ID))
			if (st == store.RequestApproved) != (execs == 1) || execs > 1 {
				t.Fatalf("%s: status %s with %d executions", tool, st, execs)
			}
		}
	})
}

// The requester, and the owners of the agent that asked, may not approve:
// each is answered, audited, and casts no vote.
func TestRequesterAndOwnerMayNotApprove(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		req := b.submit(intent{tool: "billing.quorum", requestedFor: "UBEN"})
		b.click("UBEN", billingChan, bot.ActionApprove, decisionValue(req))
		b.click("UOWN", billingChan, bot.ActionApprove, decisionValue(req))
		if got := b.ephemerals("UBEN"); !hasAny(got, "made for you") {
			t.Errorf("requester's answer = %q", got)
		}
		if got := b.ephemerals("UOWN"); !hasAny(got, "You own the agent") {
			t.Errorf("owner's answer = %q", got)
		}
		if got := b.count(`SELECT count(*) FROM votes`); got != 0 {
			t.Errorf("votes = %d", got)
		}
		if got := b.count(`SELECT count(*) FROM events WHERE kind = 'decision_refused'`); got != 2 {
			t.Errorf("refusals audited = %d, want 2", got)
		}
		if got := b.count(`SELECT count(*) FROM events WHERE kind = 'decision_refused' AND CAST(data AS text) LIKE '%agent_owner%'`); got != 1 {
			t.Errorf("the owner's refusal is not audited as agent_owner (%d)", got)
		}
	})
}

// rejectThroughModal clicks Reject (which opens the modal) and returns the
// view Slack was asked to open.
func (b *bundle) openRejectModal(user string, req store.Request, trigger string) json.RawMessage {
	b.t.Helper()
	body := bottest.ClickForm(bottest.ClickPayloadWithTrigger(user, billingChan, bot.ActionReject, decisionValue(req), trigger))
	if status, _ := b.post("/slack/interactions", body, bottest.Sign(secret, time.Now(), body)); status != http.StatusOK {
		b.t.Fatalf("reject click status %d", status)
	}
	views := b.fake.OpenedViews()
	if len(views) == 0 {
		b.t.Fatal("the reject click opened no modal")
	}
	return views[len(views)-1]
}

func (b *bundle) submitModal(user string, view json.RawMessage, reason string) string {
	b.t.Helper()
	body := bottest.ClickForm(bottest.SubmissionPayload(user, view, bot.ReasonBlockID, bot.ReasonActionID, reason))
	status, out := b.post("/slack/interactions", body, bottest.Sign(secret, time.Now(), body))
	if status != http.StatusOK {
		b.t.Fatalf("submission status %d", status)
	}
	return out
}

// Reject on a tool that asks why opens a modal with the click's trigger id;
// its submission records the vote with the reason, which reaches the
// decision, the card and the lookup. A modal submitted after the round was
// decided is answered and changes nothing; a required reason left empty
// keeps the modal open with the field's error.
func TestRejectModalRecordsTheReason(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		req := b.submit(intent{tool: "billing.quorum"})
		b.deliver()
		anaView := b.openRejectModal("UANA", req, "trigger-ana")
		benView := b.openRejectModal("UBEN", req, "trigger-ben")
		calls := b.fake.Calls("views.open")
		if len(calls) != 2 || calls[0].Form.Get("trigger_id") != "trigger-ana" || !strings.Contains(string(anaView), bot.CallbackReject) {
			t.Fatalf("views.open calls = %+v", calls)
		}
		if got := b.count(`SELECT count(*) FROM votes`); got != 0 {
			t.Fatalf("opening the modal cast %d votes", got)
		}
		if out := b.submitModal("UANA", anaView, "  amount does not match ticket 5512 "); out != "" {
			t.Fatalf("submission answer = %q, want empty (modal closes)", out)
		}
		if got := b.ephemerals("UANA"); !hasAny(got, "You rejected") {
			t.Errorf("answer = %q", got)
		}
		d, err := b.store.LatestDecision(b.ctx, req.ID)
		if err != nil || d.Verdict != store.VerdictReject || d.Reason != "amount does not match ticket 5512" {
			t.Fatalf("decision = %+v, %v", d, err)
		}
		b.deliver()
		if card := cardText(b.card(req.ID, 1)); !strings.Contains(card, "amount does not match ticket 5512") {
			t.Errorf("card lacks the reason: %s", card)
		}
		if text := b.command("UANA", req.Key); !strings.Contains(text, "Reason: amount does not match ticket 5512") {
			t.Errorf("lookup lacks the reason: %s", text)
		}

		// Ben's modal was opened before Ana decided: stale.
		if out := b.submitModal("UBEN", benView, "me too"); out != "" {
			t.Fatalf("stale submission answer = %q", out)
		}
		if got := b.ephemerals("UBEN"); !hasAny(got, "Already rejected by") {
			t.Errorf("stale modal's answer = %q", got)
		}
		if got := b.count(`SELECT count(*) FROM votes`); got != 1 {
			t.Errorf("votes = %d after a stale modal, want 1", got)
		}
		if got := b.count(`SELECT count(*) FROM decisions`); got != 1 {
			t.Errorf("decisions = %d", got)
		}

		// A required reason left empty: the modal shows the error, nothing is recorded.
		strict := b.submit(intent{tool: "billing.strict", n: 1})
		view := b.openRejectModal("UANA", strict, "trigger-strict")
		if !strings.Contains(string(view), `"optional":false`) && strings.Contains(string(view), `"optional":true`) {
			t.Errorf("a required reason's input is optional: %s", view)
		}
		out := b.submitModal("UANA", view, "   ")
		if !strings.Contains(out, `"response_action":"errors"`) || !strings.Contains(out, bot.ReasonBlockID) {
			t.Fatalf("empty required reason answered %q", out)
		}
		if got := b.request(strict.ID).Status; got != store.RequestPending {
			t.Errorf("status after an empty required reason = %s", got)
		}
		// Approve stays a button: no modal.
		before := b.fake.Count("views.open")
		b.click("UBEN", billingChan, bot.ActionApprove, decisionValue(strict))
		if b.fake.Count("views.open") != before || b.request(strict.ID).Status != store.RequestApproved {
			t.Errorf("approve opened a modal or did not decide")
		}
	})
}

// A tier matched at intake is frozen on the request: changing the tool's
// configuration afterwards does not change a pending request's policy.
func TestTierIsFrozenAtIntake(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: drv})
		at := b.submit(intent{tool: "billing.quorum", effect: `{"amount_cents":100000}`})
		over := b.submit(intent{tool: "billing.quorum", effect: `{"amount_cents":100001}`, n: 1})
		missing := b.submit(intent{tool: "billing.quorum", effect: `{"amount":100001}`, n: 2})
		if at.Policy.Approvals != 2 || at.Policy.Tier != nil {
			t.Errorf("at the boundary: %+v", at.Policy)
		}
		if over.Policy.Approvals != 3 || over.Policy.Tier == nil || *over.Policy.Tier != 0 {
			t.Errorf("past the boundary: %+v", over.Policy)
		}
		if missing.Policy.Approvals != 2 || missing.Policy.Tier != nil {
			t.Errorf("missing field: %+v", missing.Policy)
		}
		tool := b.review.Tools["billing.quorum"]
		tool.Approvals, tool.Tiers = 1, nil
		b.review.Tools["billing.quorum"] = tool
		b.click("UANA", billingChan, bot.ActionApprove, decisionValue(over))
		b.click("UBEN", billingChan, bot.ActionApprove, decisionValue(over))
		if got := b.request(over.ID).Status; got != store.RequestPending {
			t.Fatalf("a frozen 3-of-N request is %s after two approvals", got)
		}
		b.click("UCAT", billingChan, bot.ActionApprove, decisionValue(over))
		if got := b.request(over.ID).Status; got != store.RequestApproved {
			t.Fatalf("after the third approval: %s", got)
		}
	})
}
