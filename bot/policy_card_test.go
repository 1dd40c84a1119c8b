package bot_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/store"
)

// withPolicyTool configures notes.policy: notes up to 50.00 are allowed by
// the rule small-notes (with a card, notify), up to 100.00 by quiet-notes
// (without one), euro notes are denied by the rule euro, and the rest ask
// UANA.
func (b *bundle) withPolicyTool() approvals.Tool {
	b.t.Helper()
	tool := approvals.Tool{Name: "notes.policy", Channel: notesChan, Approvers: []string{"UANA"}, Tiers: []approvals.Tier{
		{Name: "euro", Verdict: approvals.VerdictDeny, Deny: "euro notes go through treasury",
			When: approvals.Condition{Field: "currency", Op: approvals.OpEQ, Value: "EUR"}},
		{Name: "small-notes", Verdict: approvals.VerdictAllow, Notify: true,
			When: approvals.Condition{Field: "amount_cents", Op: approvals.OpLTE, Value: json.Number("5000")}},
		{Name: "quiet-notes", Verdict: approvals.VerdictAllow,
			When: approvals.Condition{Field: "amount_cents", Op: approvals.OpLTE, Value: json.Number("10000")}},
	}}
	b.review.Tools[tool.Name] = tool
	return tool
}

// policyIntent is an intent for notes.policy.
func policyIntent(n, cents int, currency string) approvals.Intent {
	return approvalstest.Intent(&approvalstest.IntentOpts{
		Step: new(fmt.Sprint(n)), Tool: new("notes.policy"),
		Effect:  new(fmt.Sprintf(`{"invoice":"inv_p%d","amount_cents":%d,"currency":%q}`, n, cents, currency)),
		Summary: new(fmt.Sprintf("Note %d", n)),
	})
}

// A write a rule allows with notify gets a card without buttons that says
// which rule allowed it and the policy's version; one allowed without
// notify, and one denied, get none. Lookup shows each decision in the
// rule's words, with the version, and the audit timeline says the same.
func TestPolicyDecisionsOnTheCardAndInLookup(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	tool := b.withPolicyTool()
	version := tool.PolicyVersion()

	notified := approvalstest.Submit(t, b.review, "billing-agent", policyIntent(1, 4200, "USD"))
	quiet := approvalstest.Submit(t, b.review, "billing-agent", policyIntent(2, 9000, "USD"))
	var denied *approvals.DeniedError
	if _, _, err := b.review.Submit(b.ctx, "billing-agent", policyIntent(3, 100, "EUR")); !errors.As(err, &denied) {
		t.Fatalf("a euro note = %v, want denied by policy", err)
	}
	asked := approvalstest.Submit(t, b.review, "billing-agent", policyIntent(4, 20000, "USD"))
	for _, r := range []store.Request{notified, quiet} {
		if r.Status != store.RequestApproved {
			t.Fatalf("%s is %s, want approved by policy", r.Summary, r.Status)
		}
	}
	b.deliver()

	cards := b.fake.Messages(notesChan)
	if len(cards) != 2 {
		t.Fatalf("%d cards in the channel, want 2: the notified allow's and the asked request's", len(cards))
	}
	card := b.card(notified.ID, 1)
	if ids := card.ActionIDs(); len(ids) != 0 {
		t.Errorf("the policy's card has buttons %v, want none", ids)
	}
	blocks := string(card.Blocks)
	for _, want := range []string{"Allowed by policy rule small-notes* — no review needed", "*Policy* rule `small-notes` · version `" + version + "`"} {
		if !strings.Contains(blocks, want) {
			t.Errorf("the policy's card lacks %q:\n%s", want, blocks)
		}
	}
	for _, unwanted := range []string{"*Approved*", "needs 1 approval", "Waiting for a decision"} {
		if strings.Contains(blocks, unwanted) {
			t.Errorf("the policy's card says %q:\n%s", unwanted, blocks)
		}
	}
	if !strings.HasPrefix(card.Text, "Allowed by policy") {
		t.Errorf("the policy's card notifies %q", card.Text)
	}
	// The asked request's card keeps its buttons and names its rule too.
	askedCard := b.card(asked.ID, 1)
	if ids := askedCard.ActionIDs(); len(ids) != 2 {
		t.Errorf("the asked request's card has buttons %v, want approve and reject", ids)
	}
	if want := "Policy rule `default` · version `" + version + "`"; !strings.Contains(string(askedCard.Blocks), want) {
		t.Errorf("the asked request's card lacks %q:\n%s", want, askedCard.Blocks)
	}

	deniedKey := denied.Key
	for key, wants := range map[string][]string{
		notified.Key: {"Decision: *approve* by policy:small-notes", "via policy (round 1): allowed by policy rule small-notes\n",
			"Policy: rule `small-notes` · version `" + version + "`", "policy=allowed by policy rule small-notes"},
		quiet.Key: {"via policy (round 1): allowed by policy rule quiet-notes\n", "The card has not been posted yet."},
		deniedKey: {"Status *rejected*", "Decision: *reject* by policy:euro",
			"via policy (round 1): denied by policy rule euro: euro notes go through treasury\n",
			"Policy: rule `euro` · version `" + version + "`",
			"policy=denied by policy rule euro: euro notes go through treasury", "policy_version=" + version},
	} {
		got := b.command("USUP", key)
		for _, want := range wants {
			if !strings.Contains(got, want) {
				t.Errorf("/countersign %s lacks %q:\n%s", key, want, got)
			}
		}
		if strings.Contains(got, "Reason:") {
			t.Errorf("/countersign %s repeats the rule's message as a reason:\n%s", key, got)
		}
	}
}
