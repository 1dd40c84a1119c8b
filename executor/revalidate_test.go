package executor_test

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/executor/providertest"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

func TestAnApprovalOlderThanItsTTLAsksForANewDecision(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		longAgo := time.Now().Add(-25 * time.Hour)
		b := setup(t, &options{driver: d, reviewNow: func() time.Time { return longAgo }})
		req := b.approve(t)

		b.dispatch(t)
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecSuperseded)
		if deref(e.LastCode) != executor.CodeApprovalExpired {
			t.Fatalf("code %q", deref(e.LastCode))
		}
		if b.provider.Received() != 0 {
			t.Fatal("a stale approval was sent")
		}
		now, err := b.db.Store.RequestByID(context.Background(), req.ID)
		if err != nil {
			t.Fatal(err)
		}
		if now.Status != store.RequestPending || now.Round != 2 || !now.ExpiresAt.After(time.Now()) {
			t.Fatalf("request is %s in round %d expiring %s; want pending in round 2, open", now.Status, now.Round, now.ExpiresAt)
		}
		out := outboxRows(t, b.db, req.ID)
		if !slices.Equal(out[len(out)-2:], []string{"update_card/1", "post_card/2"}) {
			t.Fatalf("outbox %v", out)
		}
		if kinds := eventKinds(t, b.db, req.ID); kinds[len(kinds)-1] != "superseded" {
			t.Fatalf("events %v", kinds)
		}

		// A fresh decision in round 2 runs, under the same key, once.
		b.review.Now = nil
		if _, err := b.review.Decide(context.Background(), approvals.Decision{
			RequestID: req.ID, Round: 2, PayloadHash: req.PayloadHash, Verdict: store.VerdictApprove, DecidedBy: approver, Via: "slack",
		}); err != nil {
			t.Fatal(err)
		}
		b.dispatch(t)
		wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
		wantObjects(t, b.provider, req.Key, 1)
	})
}

func TestAFailedPreconditionSupersedesInsteadOfWriting(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d, tool: func(tool *executor.Tool) {
			tool.Precondition = &executor.Endpoint{URL: tool.URL[:len(tool.URL)-len("/credits")] + "/precondition"}
		}})
		// The invoice was paid in the meantime: the external state changed.
		b.provider.SetPrecondition(http.StatusPreconditionFailed)
		stale := b.approve(t)
		b.dispatch(t)
		wantState(t, b.execution(t, stale.ID), store.ExecSuperseded)
		if deref(b.execution(t, stale.ID).LastCode) != executor.CodePrecondition {
			t.Fatal("wrong code")
		}
		if b.provider.Received() != 0 {
			t.Fatal("wrote despite a failed precondition")
		}

		b.provider.SetPrecondition(http.StatusOK)
		fresh := b.approve(t)
		b.dispatch(t)
		wantState(t, b.execution(t, fresh.ID), store.ExecSucceeded)
		wantObjects(t, b.provider, fresh.Key, 1)
	})
}

func TestRevalidationAfterTheProviderSaidNotDone(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d}) // approval_ttl 24h
		req := b.approve(t)
		b.provider.SetFor(req.Key, providertest.Behavior{Status: 429, Times: 1})
		b.dispatch(t)
		wantState(t, b.execution(t, req.ID), store.ExecReady)

		// The retry comes a day later: the provider never had the write, so the
		// stale approval is sent back for a new decision instead.
		if _, err := b.later(t, 25*time.Hour).DispatchOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecSuperseded)
		if deref(e.LastCode) != executor.CodeApprovalExpired || b.provider.Writes(req.Key) != 1 {
			t.Fatalf("code %q after %d writes", deref(e.LastCode), b.provider.Writes(req.Key))
		}
	})
}

func TestNoRevalidationAfterAnAmbiguousOutcome(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		b := setup(t, &options{driver: d, tool: func(tool *executor.Tool) { tool.Verify = nil }}) // key-aware: resend under the same key
		req := b.approve(t)
		b.provider.SetFor(req.Key, providertest.Behavior{DropAfterProcess: true, Times: 1})
		b.dispatch(t)
		b.reconcile(t)
		wantState(t, b.execution(t, req.ID), store.ExecReady)

		// Even a day later the resend goes out: the write may already exist, and
		// the provider answers a resend under the same key with it.
		if _, err := b.later(t, 25*time.Hour).DispatchOnce(context.Background()); err != nil {
			t.Fatal(err)
		}
		wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
		wantObjects(t, b.provider, req.Key, 1)
	})
}
