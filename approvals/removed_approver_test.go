package approvals

import (
	"encoding/json"
	"errors"
	"maps"
	"testing"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// The configuration in force decides who may still vote or resolve, over
// the approvers frozen on a request: after a reload, someone no longer
// listed (directly or through a group) is refused with no_longer_approver,
// on a vote and on a resolution, and audited; a tool no longer configured
// leaves no one; someone still listed for a tier, or still a member of a
// listed group, keeps their power; the frozen quorum stays.
func TestConfigurationInForceDecidesWhoMayStillAct(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		tool := b.svc.Tools["billing.credit"]
		tool.Approvals = 2
		tool.Tiers = []Tier{{When: Condition{Field: "amount_cents", Op: OpGT, Value: json.Number("100000")},
			Approvers: []string{approverA, "U0CFO"}}}
		b.svc.Tools["billing.credit"] = tool
		small := b.submit(t, nil)
		big := b.submit(t, &intentOpts{RunID: ptr("r-big"), Effect: ptr(`{"invoice":"inv_1","amount_cents":200000}`)})
		gone := b.submit(t, &intentOpts{RunID: ptr("r-gone"), Tool: ptr("deploy.release")})

		// approverB leaves the tool, U0CFO moves from the tier to the tool,
		// deploy.release is removed.
		tools := maps.Clone(b.svc.Tools)
		now := tools["billing.credit"]
		now.Approvers = []string{approverA, requester, groupID, "U0CFO"}
		now.Tiers = []Tier{{When: now.Tiers[0].When, Approvers: []string{approverA}}}
		tools["billing.credit"] = now
		delete(tools, "deploy.release")
		b.svc.Reconfigure(tools, nil)

		refused := []struct {
			name string
			req  store.Request
			by   string
			want error
		}{
			{"removed from the tool", small, approverB, ErrNoLongerApprover},
			{"tool removed", gone, approverA, ErrToolRemoved},
			{"never an approver", small, outsider, ErrNotAllowed},
		}
		for _, r := range refused {
			for _, verdict := range []store.Verdict{store.VerdictApprove, store.VerdictReject} {
				d := approve(r.req, r.by)
				d.Verdict = verdict
				if _, err := b.svc.Decide(b.ctx, d); !errors.Is(err, r.want) || RefusalFor(err).Message != RefusalFor(r.want).Message {
					t.Errorf("%s: %s's %s = %v, want %v", r.name, r.by, verdict, err, r.want)
				}
			}
			if _, err := b.svc.AuthorizeResolution(b.ctx, Resolution{RequestID: r.req.ID, ExecutionID: 1, Action: "resend", By: r.by, Via: "slack"}); !errors.Is(err, r.want) || RefusalFor(err).Message != RefusalFor(r.want).Message {
				t.Errorf("%s: %s's resolution = %v, want %v", r.name, r.by, err, r.want)
			}
		}
		if ref := RefusalFor(ErrToolRemoved); ref.Code != CodeNoLongerApprover || ref.Message != RefusalFor(ErrNoLongerApprover).Message {
			t.Errorf("the refusal of a removed tool is %+v", ref)
		}
		if got := b.count(t, `SELECT count(*) FROM events WHERE kind = 'decision_refused'`); got != 6 {
			t.Errorf("%d refused votes audited, want 6", got)
		}
		if got := b.count(t, `SELECT count(*) FROM events WHERE kind = 'resolution_refused'`); got != 3 {
			t.Errorf("%d refused resolutions audited, want 3", got)
		}
		if got := b.count(t, `SELECT count(*) FROM votes`); got != 0 {
			t.Fatalf("%d votes recorded by refused people", got)
		}

		// Still listed: a member of a listed group, and an approver of the
		// frozen tier who is now the tool's; two approvals are still needed.
		if out, err := b.svc.Decide(b.ctx, approve(small, "U0GROUPMEMBER")); err != nil || !out.Counted {
			t.Fatalf("the group member's approval = %+v, %v", out, err)
		}
		if out, err := b.svc.Decide(b.ctx, approve(small, approverA)); err != nil || !out.Created {
			t.Fatalf("the second approval = %+v, %v", out, err)
		}
		if out, err := b.svc.Decide(b.ctx, approve(big, "U0CFO")); err != nil || !out.Counted {
			t.Fatalf("the tier approver's approval = %+v, %v", out, err)
		}
		if _, err := b.svc.AuthorizeResolution(b.ctx, Resolution{RequestID: big.ID, ExecutionID: 1, Action: "resend", By: "U0CFO", Via: "slack"}); err != nil {
			t.Errorf("the tier approver's resolution = %v", err)
		}
	})
}
