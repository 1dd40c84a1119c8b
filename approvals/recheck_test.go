package approvals

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// The tie-breaks of a re-check, one case each: the policy the write was
// approved under (frozen), the decision that approved it, and the policy
// in force.
func TestRecheckBreaksTiesAsDocumented(t *testing.T) {
	t.Parallel()
	big := Condition{Field: "amount_cents", Op: OpGT, Value: json.Number("100000")}
	ask := func(n int) Tool {
		return Tool{Name: "billing.credit", Approvers: []string{"U1", "U2", "U3"}, Approvals: n}
	}
	withTier := func(tool Tool, tier Tier) Tool { tool.Tiers = []Tier{tier}; return tool }
	human := store.Decision{DecidedBy: "U1", Via: "slack"}
	for _, tc := range []struct {
		name     string
		frozen   Tool // the policy at intake, evaluated on the same effect
		decision store.Decision
		now      Tool
		stricter bool
		denied   bool
	}{
		{"the same rules", ask(1), human, ask(1), false, false},
		{"more approvals than the round gave", ask(1), human, ask(2), true, false},
		{"fewer approvals", ask(2), human, ask(1), false, false},
		{"the same count from other approvers", ask(2), human, Tool{Name: "billing.credit", Approvers: []string{"U9"}, Approvals: 2}, false, false},
		{"a tier that now matches asks more", ask(1), human, withTier(ask(1), Tier{Name: "large", When: big, Approvals: 2}), true, false},
		{"a tier that denies", ask(1), human, withTier(ask(1), Tier{Name: "frozen", When: big, Verdict: VerdictDeny, Deny: "no"}), true, true},
		{"a shadow tier that would deny decides nothing", ask(1), human,
			withTier(ask(1), Tier{Name: "trial", When: big, Verdict: VerdictDeny, Deny: "no", Shadow: true}), false, false},
		{"a tool that now allows", ask(2), human, Tool{Name: "billing.credit", Verdict: VerdictAllow}, false, false},
		{"an allow by policy gave no approval", Tool{Name: "billing.credit", Verdict: VerdictAllow},
			store.Decision{DecidedBy: "policy:default", Via: ViaPolicy}, ask(1), true, false},
		{"an allow by policy still allowed", Tool{Name: "billing.credit", Verdict: VerdictAllow},
			store.Decision{DecidedBy: "policy:default", Via: ViaPolicy}, withTier(Tool{Name: "billing.credit", Verdict: VerdictAllow}, Tier{Name: "small", When: big, Verdict: VerdictAllow}), false, false},
		{"a grant gave one approval", ask(1), store.Decision{DecidedBy: "grant:g1", Via: ViaGrant}, ask(1), false, false},
		{"a grant is not two approvals", ask(1), store.Decision{DecidedBy: "grant:g1", Via: ViaGrant}, ask(2), true, false},
	} {
		effect := []byte(`{"amount_cents":250000,"currency":"USD"}`)
		req := store.Request{Tool: "billing.credit", Snapshot: effect, RequestedBy: "agent", Policy: tc.frozen.PolicyFor(effect)}
		r, err := tc.now.Recheck(req, tc.decision, time.Now())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r.Stricter != tc.stricter || (r.Denial != nil) != tc.denied {
			t.Errorf("%s: stricter %v, denial %+v; want stricter %v, denied %v", tc.name, r.Stricter, r.Denial, tc.stricter, tc.denied)
		}
		if r.Policy.Version != tc.now.PolicyVersion() {
			t.Errorf("%s: the policy in force has version %q, want %q", tc.name, r.Policy.Version, tc.now.PolicyVersion())
		}
		if tc.denied && (r.Denial.DecidedBy != "policy:frozen" || r.Denial.Via != ViaPolicy || r.Denial.Reason != "no" ||
			r.Denial.Verdict != store.VerdictReject || r.Policy.Verdict != VerdictDeny) {
			t.Errorf("%s: denial %+v, policy %+v", tc.name, r.Denial, r.Policy)
		}
	}
}

// A snapshot that cannot be read is an error, never a verdict that lets
// the write go.
func TestRecheckOfAnUnreadableSnapshotIsAnError(t *testing.T) {
	t.Parallel()
	tool := Tool{Name: "billing.credit", Verdict: VerdictAllow}
	if _, err := tool.Recheck(store.Request{Snapshot: []byte(`{`)}, store.Decision{}, time.Now()); err == nil {
		t.Fatal("Recheck of an unreadable snapshot = nil error")
	}
}
