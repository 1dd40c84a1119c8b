package hook

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/wire"
)

// A reviewer's reject tells the agent why and what a retry does: the
// callback and every answer carry the reason and the retry hint, and
// posting the same intent again returns the same rejection.
func TestRejectionSaysWhatARetryDoes(t *testing.T) {
	forEachDriver(t, func(t *testing.T, drv *drivertest.Driver) {
		t.Parallel()
		b := setupCallbacks(t, drv)
		tool := b.svc.Tools["billing.credit"]
		tool.RejectReason = approvals.ReasonOptional
		b.svc.Tools["billing.credit"] = tool
		v := b.post(t, vectorBody).view(t)
		out, err := b.svc.Decide(b.ctx, approvals.Decision{RequestID: v.ID, Round: 1, PayloadHash: v.PayloadHash,
			Verdict: store.VerdictReject, DecidedBy: approverA, Via: "inbox", Reason: "wrong invoice"})
		if err != nil || !out.Created {
			t.Fatalf("reject = %+v, %v", out, err)
		}
		rejected := func(where string, got wire.Request) {
			t.Helper()
			if got.Status != wire.StatusRejected || got.Decision == nil || got.Decision.Reason != "wrong invoice" || got.Decision.Retry != wire.RetryRejected {
				t.Errorf("%s: %+v, decision %+v", where, got, got.Decision)
			}
		}
		again := b.post(t, vectorBody)
		if again.status != http.StatusOK {
			t.Fatalf("the same intent again = %d %s", again.status, again.body)
		}
		rejected("the same intent posted again", again.view(t))

		claimed, err := b.store.ClaimCallbacks(b.ctx, 10, time.Hour)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("ClaimCallbacks = %d, %v", len(claimed), err)
		}
		body, err := CallbackBody(b.ctx, b.svc, claimed[0])
		if err != nil {
			t.Fatal(err)
		}
		var cb wire.Request
		if err := json.Unmarshal(body, &cb); err != nil {
			t.Fatal(err)
		}
		rejected("the callback", cb)
	})
}
