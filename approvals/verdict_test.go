package approvals

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

func creditTool() Tool {
	return Tool{Name: "billing.credit", Approvers: []string{"U1", "U2"}, Tiers: []Tier{
		{Name: "watch-small", When: Condition{Field: "amount_cents", Op: OpLTE, Value: json.Number("100")}, Verdict: VerdictAllow, Shadow: true},
		{Name: "frozen", When: Condition{Field: "invoice", Op: OpEQ, Value: "inv_0"}, Verdict: VerdictDeny, Deny: "frozen"},
		{When: Condition{Field: "amount_cents", Op: OpLTE, Value: json.Number("5000")}, Verdict: VerdictAllow, Notify: true},
		{Name: "large", When: Condition{Field: "amount_cents", Op: OpGT, Value: json.Number("100000")}, Approvals: 2},
	}}
}

func evaluate(t *testing.T, tool Tool, effect string) Evaluation {
	t.Helper()
	in, err := NewPolicyInput([]byte(effect), tool.Name, "agent", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tool.Evaluate(in)
}

// The first matching tier that is not a shadow decides; shadow tiers that
// match before it are recorded; an unnamed tier is named by its place.
func TestEvaluateWalksTheTiersInOrder(t *testing.T) {
	t.Parallel()
	tool := creditTool()
	for _, tc := range []struct {
		effect    string
		verdict   Verdict
		tier      string
		approvals int
		notify    bool
		shadow    int
	}{
		{`{"invoice":"inv_0","amount_cents":50}`, VerdictDeny, "frozen", 0, false, 1},
		{`{"invoice":"inv_1","amount_cents":50}`, VerdictAllow, "tier-3", 0, true, 1},
		{`{"invoice":"inv_1","amount_cents":4200}`, VerdictAllow, "tier-3", 0, true, 0},
		{`{"invoice":"inv_1","amount_cents":9000}`, VerdictAsk, DefaultTierName, 1, false, 0},
		{`{"invoice":"inv_1","amount_cents":200000}`, VerdictAsk, "large", 2, false, 0},
		{`{"invoice":"inv_1"}`, VerdictAsk, DefaultTierName, 1, false, 0}, // a missing field matches nothing
	} {
		ev := evaluate(t, tool, tc.effect)
		p := ev.Policy
		if p.Verdict != tc.verdict || p.TierName != tc.tier || p.Approvals != tc.approvals || ev.Notify != tc.notify || len(ev.Shadow) != tc.shadow {
			t.Errorf("%s: got %s %q approvals %d notify %v shadow %v", tc.effect, p.Verdict, p.TierName, p.Approvals, ev.Notify, ev.Shadow)
		}
		if (p.Verdict == VerdictDeny) != (p.Deny == "frozen") {
			t.Errorf("%s: deny message %q", tc.effect, p.Deny)
		}
		if p.Version != tool.PolicyVersion() {
			t.Errorf("%s: version %s, the tool's is %s", tc.effect, p.Version, tool.PolicyVersion())
		}
	}
}

// The version changes with every rule that decides, and not with shadow
// rules or a card's settings.
func TestPolicyVersionFollowsTheDecidingRules(t *testing.T) {
	t.Parallel()
	base := creditTool().PolicyVersion()
	same := creditTool()
	same.Tiers[0].When = Condition{Field: "amount_cents", Op: OpLTE, Value: json.Number("999")}
	same.Tiers[2].Notify = false
	same.RemindAfter = time.Hour
	if v := same.PolicyVersion(); v != base {
		t.Errorf("a shadow rule or a card setting changed the version: %s, was %s", v, base)
	}
	for name, change := range map[string]func(*Tool){
		"a threshold": func(tool *Tool) {
			tool.Tiers[2].When = Condition{Field: "amount_cents", Op: OpLTE, Value: json.Number("5001")}
		},
		"a verdict":      func(tool *Tool) { tool.Tiers[2].Verdict = VerdictAsk },
		"a deny text":    func(tool *Tool) { tool.Tiers[1].Deny = "frozen for audit" },
		"approvals":      func(tool *Tool) { tool.Tiers[3].Approvals = 3 },
		"approvers":      func(tool *Tool) { tool.Approvers = []string{"U1"} },
		"tier order":     func(tool *Tool) { tool.Tiers[1], tool.Tiers[2] = tool.Tiers[2], tool.Tiers[1] },
		"the tool's own": func(tool *Tool) { tool.Verdict = VerdictDeny },
	} {
		tool := creditTool()
		change(&tool)
		if tool.PolicyVersion() == base {
			t.Errorf("changing %s kept the version", name)
		}
	}
}

func TestStricter(t *testing.T) {
	t.Parallel()
	ask := func(n int) store.Policy { return store.Policy{Verdict: VerdictAsk, Approvals: n} }
	allow := store.Policy{Verdict: VerdictAllow}
	deny := store.Policy{Verdict: VerdictDeny}
	for _, tc := range []struct {
		name        string
		frozen, now store.Policy
		granted     bool
		want        bool
	}{
		{"deny after one approval", ask(1), deny, false, true},
		{"deny after an allow", allow, deny, false, true},
		{"two after one", ask(1), ask(2), false, true},
		{"one after an allow", allow, ask(1), false, true},
		{"one after one", ask(1), ask(1), false, false},
		{"one after two", ask(2), ask(1), false, false},
		{"allow after one", ask(1), allow, false, false},
		{"two after a grant", ask(1), ask(2), true, true},
		{"one after a grant", ask(1), ask(1), true, false},
		{"a request older than verdicts, then one", store.Policy{Approvals: 1}, ask(1), false, false},
	} {
		if got := Stricter(tc.frozen, tc.now, tc.granted); got != tc.want {
			t.Errorf("%s: Stricter = %v, want %v", tc.name, got, tc.want)
		}
	}
}
