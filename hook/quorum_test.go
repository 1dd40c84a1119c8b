package hook

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/wire"
)

// The representation carries the frozen policy, the round's votes and the
// decision's reason; the vote metrics count what each vote did; a reject
// with a required reason is refused without one and changes nothing.
func TestVotesReachTheRepresentationAndTheMetrics(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupWith(t, drv)
		b.svc.Metrics = approvals.NewMetrics(prometheus.NewRegistry())
		tool := b.svc.Tools["billing.credit"]
		tool.Approvers = []string{"U0ANA", "U0BEN", "U0CAT"}
		tool.Approvals, tool.RejectReason = 2, approvals.ReasonRequired
		b.svc.Tools["billing.credit"] = tool
		req := b.submit(t, nil)
		if req.Policy.Approvals != 2 || strings.Join(req.Policy.Approvers, ",") != "U0ANA,U0BEN,U0CAT" {
			t.Fatalf("policy = %+v", req.Policy)
		}

		first, err := b.svc.Decide(b.ctx, approve(req, "U0ANA"))
		if err != nil || !first.Counted || first.Created || first.Err() != nil || first.Progress() != "1 of 2 approvals: waiting for one more approver" {
			t.Fatalf("first approval = %+v, %v", first, err)
		}
		again, err := b.svc.Decide(b.ctx, approve(req, "U0ANA"))
		if err != nil || !again.Repeat || again.Err() != nil || len(again.Votes) != 1 {
			t.Fatalf("repeat = %+v, %v", again, err)
		}
		reject := approvals.Decision{RequestID: req.ID, Round: 1, PayloadHash: req.PayloadHash, Verdict: store.VerdictReject, DecidedBy: "U0BEN", Via: "inbox"}
		var input *approvals.InputError
		if _, err := b.svc.Decide(b.ctx, reject); !errors.As(err, &input) || input.Field != "/reason" {
			t.Fatalf("reject without a required reason = %v", err)
		}
		if got := b.count(t, `SELECT count(*) FROM votes`); got != 1 {
			t.Fatalf("votes after a refused reject = %d", got)
		}
		reject.Reason = strings.Repeat("x", 2001) // a reason holds at most 2000 bytes
		if _, err := b.svc.Decide(b.ctx, reject); !errors.As(err, &input) {
			t.Fatalf("an overlong reason = %v", err)
		}
		reject.Reason = " duplicate of inv_8840 "
		out, err := b.svc.Decide(b.ctx, reject)
		if err != nil || !out.Created || out.Decision.Reason != "duplicate of inv_8840" {
			t.Fatalf("reject = %+v, %v", out, err)
		}

		stored, err := b.store.RequestByID(b.ctx, req.ID)
		if err != nil {
			t.Fatal(err)
		}
		v, err := viewOf(b.ctx, b.svc, stored)
		if err != nil {
			t.Fatal(err)
		}
		if v.Policy.Approvals != 2 || v.Policy.Tier != nil || len(v.Policy.Approvers) != 3 {
			t.Errorf("policy view = %+v", v.Policy)
		}
		if len(v.Votes) != 2 || v.Votes[0].By != "U0ANA" || v.Votes[1].Verdict != string(store.VerdictReject) || v.Votes[1].Reason != "duplicate of inv_8840" {
			t.Errorf("votes view = %+v", v.Votes)
		}
		if v.Decision == nil || v.Decision.Reason != "duplicate of inv_8840" || v.Decision.By != "U0BEN" || v.Decision.Retry != wire.RetryRejected {
			t.Errorf("decision view = %+v", v.Decision)
		}
		for labels, want := range map[[2]string]float64{
			{"approve", "counted"}: 1, {"approve", "repeat"}: 1, {"reject", "decided"}: 1,
		} {
			if got := testutil.ToFloat64(b.svc.Metrics.Votes.WithLabelValues(labels[0], labels[1])); got != want {
				t.Errorf("votes{%s,%s} = %v, want %v", labels[0], labels[1], got, want)
			}
		}
	})
}
