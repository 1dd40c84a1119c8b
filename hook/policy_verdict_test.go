package hook

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/wire"
)

// withVerdicts gives billing.credit a policy with all three verdicts:
// credits to invoice inv_0 (frozen) are refused, credits of at most 100 cents
// are allowed, and the rest are asked of a reviewer.
func (b *bundle) withVerdicts() {
	tool := b.svc.Tools["billing.credit"]
	tool.Tiers = []approvals.Tier{
		{Name: "frozen-invoice", When: approvals.Condition{Field: "invoice", Op: approvals.OpEQ, Value: "inv_0"},
			Verdict: approvals.VerdictDeny, Deny: "Credits to a frozen invoice are never sent."},
		{Name: "small", When: approvals.Condition{Field: "amount_cents", Op: approvals.OpLTE, Value: json.Number("100")},
			Verdict: approvals.VerdictAllow},
	}
	b.svc.Tools["billing.credit"] = tool
}

func credit(amount, invoice string) string {
	return `{"run_id": "r-policy", "step": 1, "tool": "billing.credit",
		"effect": {"invoice": "` + invoice + `", "amount_cents": ` + amount + `, "currency": "USD"}}`
}

// An allowed intent is decided in the transaction that stores it: approved
// by policy:<rule>, its execution queued, no card; a replay returns it.
func TestPolicyAllowsAtIntake(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.withVerdicts()
		first := b.post(t, credit("42", "inv_1"))
		v := first.view(t)
		if first.status != http.StatusCreated || v.Status != wire.StatusApproved || v.Decision == nil ||
			v.Decision.By != "policy:small" || v.Decision.Via != approvals.ViaPolicy || v.Decision.Retry != "" {
			t.Fatalf("allowed intent = %d %s", first.status, first.body)
		}
		if p := v.Policy; p.Verdict != "allow" || p.TierName != "small" || p.Approvals != 0 || !strings.HasPrefix(p.Version, "sha256:") {
			t.Errorf("policy = %+v", p)
		}
		if v.Execution == nil || v.Execution.State != wire.ExecReady {
			t.Errorf("execution = %+v, want ready", v.Execution)
		}
		again := b.post(t, credit("42", "inv_1"))
		if again.status != http.StatusOK || again.view(t).ID != v.ID || again.view(t).Decision.By != "policy:small" {
			t.Errorf("replay = %d %s", again.status, again.body)
		}
		b.countRows(t, 0, `SELECT count(*) FROM outbox WHERE kind = $1`, string(store.OutboxPostCard))
		b.countRows(t, 1, `SELECT count(*) FROM executions`)
		b.countRows(t, 1, `SELECT count(*) FROM decisions WHERE decided_by = 'policy:small' AND via = 'policy'`)
		b.countRows(t, 1, `SELECT count(*) FROM events WHERE kind = 'decided'`)
	})
}

// A denied intent is 403 denied_by_policy on its first post and on every
// replay, stored as rejected by the rule with its message, and never queued
// for execution or shown on a card.
func TestPolicyDeniesOnEveryPost(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.withVerdicts()
		var key string
		for i := range 3 {
			r := b.post(t, credit("4200", "inv_0"))
			var body wire.ErrorBody
			if err := json.Unmarshal(r.body, &body); err != nil {
				t.Fatal(err)
			}
			e := body.Error
			if r.status != http.StatusForbidden || e.Code != approvals.CodeDeniedByPolicy || e.Tier != "frozen-invoice" ||
				!strings.Contains(e.Message, "Credits to a frozen invoice are never sent.") || !strings.HasPrefix(e.Key, "wa_") {
				t.Fatalf("post %d = %d %s", i+1, r.status, r.body)
			}
			if key != "" && e.Key != key {
				t.Errorf("post %d named key %s, the first %s", i+1, e.Key, key)
			}
			key = e.Key
		}
		got := b.do(t, http.MethodGet, "/v1/requests/"+key, testToken, nil, nil).view(t)
		if got.Status != wire.StatusRejected || got.Decision == nil || got.Decision.By != "policy:frozen-invoice" ||
			got.Decision.Reason != "Credits to a frozen invoice are never sent." || got.Decision.Retry != wire.RetryDenied ||
			got.Policy.Verdict != "deny" || got.Execution != nil {
			t.Errorf("denied request = %+v", got)
		}
		b.countRows(t, 0, `SELECT count(*) FROM outbox WHERE kind = $1`, string(store.OutboxPostCard))
		b.countRows(t, 0, `SELECT count(*) FROM executions`)
		b.countRows(t, 1, `SELECT count(*) FROM requests`)
	})
}

// An intent no rule decides is asked of a reviewer, as before verdicts.
func TestPolicyAsksWhatItDoesNotDecide(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.withVerdicts()
		r := b.post(t, credit("9000", "inv_1"))
		v := r.view(t)
		if r.status != http.StatusCreated || v.Status != wire.StatusPending || v.Policy.Verdict != "ask" ||
			v.Policy.TierName != approvals.DefaultTierName || v.Policy.Approvals != 1 {
			t.Fatalf("asked intent = %d %s", r.status, r.body)
		}
		b.countRows(t, 1, `SELECT count(*) FROM outbox WHERE kind = $1`, string(store.OutboxPostCard))
		b.countRows(t, 0, `SELECT count(*) FROM executions`)
	})
}

// countRows fails the test unless the query counts want rows.
func (b *bundle) countRows(t *testing.T, want int, sql string, args ...any) {
	t.Helper()
	if n := b.count(t, sql, args...); n != want {
		t.Errorf("%s = %d, want %d", sql, n, want)
	}
}
