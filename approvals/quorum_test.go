package approvals

import (
	"errors"
	"strings"
	"testing"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// An approval by an owner of the agent, or by someone outside the frozen
// approvers, is refused and audited; an owner may still reject.
func TestOwnersMayNotApprove(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.svc.Owners = map[string][]string{"billing-agent": {"S0OWNERS"}}
		b.svc.Groups = fixedGroups{"S0OWNERS": {"U0OWN"}}
		tool := b.svc.Tools["billing.credit"]
		tool.Approvers = []string{"U0OWN", "U0ANA"}
		b.svc.Tools["billing.credit"] = tool
		req := b.submit(t, nil)
		if _, err := b.svc.Decide(b.ctx, approve(req, "U0OWN")); !errors.Is(err, ErrOwnerApproval) || !errors.Is(err, ErrSelfApproval) {
			t.Fatalf("owner's approval = %v", err)
		}
		if ref := RefusalFor(ErrOwnerApproval); ref.Code != CodeSelfApproval || !strings.Contains(ref.Message, "own the agent") {
			t.Errorf("owner's refusal = %+v", ref)
		}
		if _, err := b.svc.Decide(b.ctx, approve(req, "U0ZED")); !errors.Is(err, ErrNotAllowed) {
			t.Fatalf("outsider's approval = %v", err)
		}
		if got := b.count(t, `SELECT count(*) FROM events WHERE kind = 'decision_refused'`); got != 2 {
			t.Errorf("refusals audited = %d", got)
		}
		out, err := b.svc.Decide(b.ctx, Decision{RequestID: req.ID, Round: 1, PayloadHash: req.PayloadHash,
			Verdict: store.VerdictReject, DecidedBy: "U0OWN", Via: "slack"})
		if err != nil || !out.Created {
			t.Fatalf("owner's reject = %+v, %v", out, err)
		}
	})
}
