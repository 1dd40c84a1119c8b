package executor_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/store"
)

// An approver's edit runs; the request it replaced never does: the
// provider receives exactly one write, under the edit's key, with the
// edited effect, and none under the original's.
func TestAnEditedRequestNeverExecutes(t *testing.T) {
	b := setup(t, nil)
	ctx := context.Background()
	orig := approvalstest.Submit(t, b.review, "agent", approvalstest.Intent(&approvalstest.IntentOpts{
		RunID: new("run-edit"), Step: new(`1`), Tool: new(toolName), Reason: new(""),
	}))
	out, err := b.review.ApproveWithEdit(ctx, approvals.Edit{RequestID: orig.ID, Round: orig.Round, PayloadHash: orig.PayloadHash,
		Effect: json.RawMessage(`{"invoice":"inv_8841","amount_cents":4300,"currency":"USD"}`), EditedBy: approver, Via: "console"})
	if err != nil || !out.Approved {
		t.Fatalf("ApproveWithEdit = %+v, %v", out, err)
	}
	for b.dispatch(t) > 0 {
	}
	wantState(t, b.execution(t, out.Edit.ID), store.ExecSucceeded)
	wantObjects(t, b.provider, out.Edit.Key, 1)
	if n := b.provider.Writes(orig.Key); n != 0 {
		t.Errorf("the provider received %d writes under the edited original's key, want 0", n)
	}
	if n := b.provider.Received(); n != 1 {
		t.Errorf("the provider received %d writes, want 1 (the edit's)", n)
	}
	if _, err := b.db.Store.LatestExecution(ctx, orig.ID); err != store.ErrNotFound {
		t.Errorf("the original's execution: %v, want none", err)
	}
	for _, o := range b.provider.AllObjects() {
		var body map[string]any
		if err := json.Unmarshal(o.Body, &body); err != nil || body["amount_cents"] != float64(4300) {
			t.Errorf("the provider stored %s, %v; want the edited effect", o.Body, err)
		}
	}
}
