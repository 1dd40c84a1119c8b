package executor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/approvals/approvalstest"
	"github.com/countersign/countersign/config"
	"github.com/countersign/countersign/executor"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

const secondApprover = "U0SECOND"

// reviewTool is the tool's review policy before the reload: one approval.
func reviewTool() approvals.Tool {
	return approvals.Tool{Name: toolName, Approvers: []string{approver, secondApprover}, MaxAttempts: 3}
}

// heldAcrossAReload approves a write, holds its dispatch in the tool's
// precondition call (the provider does not answer it), reloads the tool's
// policy as reloaded says, as serve's reload does (the executor's tools,
// then the review service's), and lets the dispatch go. It returns the
// request and its run id.
func heldAcrossAReload(t *testing.T, d *drivertest.Driver, reloaded approvals.Tool) (*bundle, store.Request, string) {
	t.Helper()
	b := setup(t, &options{driver: d,
		review: func(rt *approvals.Tool) { *rt = reviewTool() },
		tool: func(tool *executor.Tool) {
			tool.Precondition = &executor.Endpoint{URL: tool.URL[:len(tool.URL)-len("/credits")] + "/precondition"}
			*tool = config.WithPolicy(*tool, reviewTool())
		},
	})
	runID := fmt.Sprintf("run-recheck-%d", seq.Add(1))
	req := approveOn(t, b.review, runID)
	b.provider.HangPrecondition(true)

	dispatched := make(chan error, 1)
	go func() {
		_, err := b.exec.DispatchOnce(context.Background())
		dispatched <- err
	}()
	eventually(t, 10*time.Second, "the dispatch to be held in its precondition call", func() bool {
		return b.provider.PreconditionChecks() == 1
	})
	exec := b.tool
	exec.Recheck, exec.PolicyVersion = nil, ""
	b.exec.SetTools(map[string]executor.Tool{toolName: config.WithPolicy(exec, reloaded)})
	b.review.Reconfigure(map[string]approvals.Tool{toolName: reloaded}, nil)
	b.provider.Release()
	select {
	case err := <-dispatched:
		if err != nil {
			t.Fatalf("dispatching: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the held dispatch never ended")
	}
	return b, req, runID
}

// supersededEvent returns the request's superseded audit event.
func supersededEvent(t *testing.T, db store.Store, requestID string) store.Event {
	t.Helper()
	events, err := db.EventsFor(context.Background(), requestID)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.Kind == store.EventSuperseded {
			return e
		}
	}
	t.Fatalf("no superseded event among %d", len(events))
	return store.Event{}
}

// A configuration that denies the write, reloaded after its approval and
// before its dispatch: nothing reaches the provider, the request is rejected
// by the policy in a new round with the deny message, replays of the intent
// are 403 denied_by_policy, and the audit names both versions.
func TestAPolicyReloadedToDenyStopsAnApprovedWrite(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		denies := reviewTool()
		denies.Tiers = []approvals.Tier{{Name: "usd-paused", When: approvals.Condition{Field: "currency", Op: approvals.OpEQ, Value: "USD"},
			Verdict: approvals.VerdictDeny, Deny: "USD credits are paused"}}
		b, req, runID := heldAcrossAReload(t, d, denies)

		if n := b.provider.Received(); n != 0 {
			t.Fatalf("the provider received %d writes, want none", n)
		}
		e := b.execution(t, req.ID)
		wantState(t, e, store.ExecSuperseded)
		if deref(e.LastCode) != executor.CodePolicyStricter {
			t.Errorf("code %q", deref(e.LastCode))
		}
		now, err := b.db.Store.RequestByID(context.Background(), req.ID)
		if err != nil {
			t.Fatal(err)
		}
		if now.Status != store.RequestRejected || now.Round != 2 || now.Policy.Verdict != approvals.VerdictDeny ||
			now.Policy.Version != denies.PolicyVersion() || now.Policy.TierName != "usd-paused" {
			t.Fatalf("request is %s in round %d under %+v", now.Status, now.Round, now.Policy)
		}
		dec, err := b.db.Store.DecisionFor(context.Background(), req.ID, 2)
		if err != nil || dec.DecidedBy != "policy:usd-paused" || dec.Via != approvals.ViaPolicy || dec.Reason != "USD credits are paused" {
			t.Fatalf("decision of round 2 = %+v, %v", dec, err)
		}
		ev := supersededEvent(t, b.db.Store, req.ID)
		if ev.Data["policy_version"] != reviewTool().PolicyVersion() || ev.Data["new_policy_version"] != denies.PolicyVersion() ||
			ev.Data["code"] != executor.CodePolicyStricter {
			t.Errorf("superseded event data = %v", ev.Data)
		}
		if out := outboxRows(t, b.db, req.ID); slices.Contains(out, "post_card/2") {
			t.Errorf("a card was queued for the denied round: %v", out)
		}
		// The intent's replay is answered as a denial at intake is.
		_, _, err = b.review.Submit(context.Background(), "agent", approvalstest.Intent(&approvalstest.IntentOpts{
			RunID: &runID, Step: new(`1`), Tool: new(toolName), Reason: new(""), IdempotencyKey: new(""),
		}))
		var denied *approvals.DeniedError
		if !errors.As(err, &denied) || !errors.Is(err, approvals.ErrDeniedByPolicy) || denied.Message != "USD credits are paused" {
			t.Errorf("replay = %v, want denied_by_policy", err)
		}
		// Nothing is left to run.
		if n := b.dispatch(t); n != 0 || b.provider.Received() != 0 {
			t.Errorf("a later dispatch claimed %d and the provider received %d", n, b.provider.Received())
		}
	})
}

// A configuration that asks two approvals of the write, reloaded after its
// one approval and before its dispatch: nothing is sent, the request waits
// in round 2 under the new policy, and runs once that round has its two.
func TestAPolicyReloadedToAskMoreApprovalsStartsANewRound(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		two := reviewTool()
		two.Approvals = 2
		b, req, _ := heldAcrossAReload(t, d, two)

		if n := b.provider.Received(); n != 0 {
			t.Fatalf("the provider received %d writes, want none", n)
		}
		wantState(t, b.execution(t, req.ID), store.ExecSuperseded)
		now, err := b.db.Store.RequestByID(context.Background(), req.ID)
		if err != nil {
			t.Fatal(err)
		}
		if now.Status != store.RequestPending || now.Round != 2 || now.Policy.Approvals != 2 || now.Policy.Version != two.PolicyVersion() {
			t.Fatalf("request is %s in round %d under %+v; want pending in round 2 needing 2", now.Status, now.Round, now.Policy)
		}
		ev := supersededEvent(t, b.db.Store, req.ID)
		if ev.Data["policy_version"] != reviewTool().PolicyVersion() || ev.Data["new_policy_version"] != two.PolicyVersion() {
			t.Errorf("superseded event data = %v", ev.Data)
		}
		if out := outboxRows(t, b.db, req.ID); !slices.Contains(out, "post_card/2") {
			t.Errorf("no card queued for round 2: %v", out)
		}

		// Round 2 under the new policy: one approval waits, the second runs it, once.
		for i, by := range []string{approver, secondApprover} {
			out, err := b.review.Decide(context.Background(), approvals.Decision{RequestID: req.ID, Round: 2, PayloadHash: req.PayloadHash,
				Verdict: store.VerdictApprove, DecidedBy: by, Via: "slack"})
			if err != nil || out.Created != (i == 1) {
				t.Fatalf("approval %d in round 2: created %v, %v", i+1, out.Created, err)
			}
		}
		b.dispatch(t)
		wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
		wantObjects(t, b.provider, req.Key, 1)
		if b.provider.Received() != 1 {
			t.Errorf("the provider received %d writes, want 1", b.provider.Received())
		}
	})
}

// A looser configuration (the write is now allowed without a human),
// reloaded the same way: the approved write goes, once, and is not
// superseded.
func TestAPolicyReloadedLooserLetsTheApprovedWriteGo(t *testing.T) {
	drivertest.ForEach(t, func(t *testing.T, d *drivertest.Driver) {
		t.Parallel()
		allows := reviewTool()
		allows.Verdict = approvals.VerdictAllow
		b, req, _ := heldAcrossAReload(t, d, allows)

		wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
		wantObjects(t, b.provider, req.Key, 1)
		if b.provider.Received() != 1 {
			t.Errorf("the provider received %d writes, want 1", b.provider.Received())
		}
		if kinds := eventKinds(t, b.db.Store, req.ID); slices.Contains(kinds, "superseded") {
			t.Errorf("events %v", kinds)
		}
		now, err := b.db.Store.RequestByID(context.Background(), req.ID)
		if err != nil || now.Round != 1 || now.Policy.Version != reviewTool().PolicyVersion() {
			t.Errorf("request round %d under %+v, %v; want round 1 under its frozen policy", now.Round, now.Policy, err)
		}
	})
}

// With the policy unchanged, the claim's version is the tool's and nothing
// is read: the write goes at once.
func TestAnUnchangedPolicyIsNotRechecked(t *testing.T) {
	t.Parallel()
	rechecked := 0
	b := setup(t, &options{
		review: func(rt *approvals.Tool) { *rt = reviewTool() },
		tool: func(tool *executor.Tool) {
			*tool = config.WithPolicy(*tool, reviewTool())
			inner := tool.Recheck
			tool.Recheck = func(ctx context.Context, req store.Request, d store.Decision) (executor.PolicyRecheck, error) {
				rechecked++
				return inner(ctx, req, d)
			}
		},
	})
	req := b.approve(t)
	b.dispatch(t)
	wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
	if rechecked != 0 {
		t.Errorf("the policy was re-checked %d times with its version unchanged", rechecked)
	}
}

// A policy that cannot be re-checked sends nothing: the claim is released
// to be tried again, and the next attempt re-checks.
func TestAPolicyThatCannotBeRecheckedSendsNothing(t *testing.T) {
	t.Parallel()
	fail := true
	b := setup(t, &options{
		review: func(rt *approvals.Tool) { *rt = reviewTool() },
		tool: func(tool *executor.Tool) {
			tool.PolicyVersion = "sha256:another"
			tool.Recheck = func(context.Context, store.Request, store.Decision) (executor.PolicyRecheck, error) {
				if fail {
					return executor.PolicyRecheck{}, errors.New("the rules could not be read")
				}
				return executor.PolicyRecheck{}, nil
			}
		},
	})
	req := b.approve(t)
	b.dispatch(t)
	e := b.execution(t, req.ID)
	wantState(t, e, store.ExecReady)
	if deref(e.LastCode) != executor.CodePolicyUnchecked || b.provider.Received() != 0 {
		t.Fatalf("code %q, %d writes", deref(e.LastCode), b.provider.Received())
	}
	fail = false
	b.dispatch(t)
	wantState(t, b.execution(t, req.ID), store.ExecSucceeded)
	wantObjects(t, b.provider, req.Key, 1)
}
