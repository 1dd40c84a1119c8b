package drivertest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// approvedUnder inserts a request whose frozen policy asks for one approval
// under version, and approves it; its execution is ready.
func approvedUnder(t *testing.T, b *Backend, key, version string) store.Request {
	t.Helper()
	p := newRequest(key, "sha256:b")
	p.Policy = store.Policy{Verdict: store.PolicyAsk, Approvals: 1, TierName: "default", Version: version}
	req, _, ok, err := b.Decide(context.Background(), decide(insert(t, b, p), store.VerdictApprove, "U1"))
	if err != nil || !ok {
		t.Fatalf("Decide(%s) = %v, decided %v", key, err, ok)
	}
	return req
}

// lastEvent returns the request's newest audit event.
func lastEvent(t *testing.T, b *Backend, requestID string, kind store.EventKind) store.Event {
	t.Helper()
	events, err := b.EventsFor(context.Background(), requestID)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Kind == kind {
			return events[i]
		}
	}
	t.Fatalf("no %s event among %d", kind, len(events))
	return store.Event{}
}

// A claim carries the version of its request's frozen policy, and a
// supersede under a stricter policy freezes that policy on the new round:
// the new round needs what it asks.
func testSupersedeUnderANewPolicy(t *testing.T, b *Backend) {
	ctx := context.Background()
	withCallbacks(t, b, "agent")
	req := approvedUnder(t, b, "wa_stricter", "sha256:old")
	c := claimOne(t, b, "w")
	if c.PolicyVersion != "sha256:old" {
		t.Fatalf("claim's policy version = %q, want the request's", c.PolicyVersion)
	}
	stricter := store.Policy{Verdict: store.PolicyAsk, Approvals: 2, Approvers: []string{"U1", "U2", "U3"},
		TierName: "large", Version: "sha256:new"}
	round, ok, err := b.Supersede(ctx, store.SupersedeParams{ExecutionID: c.ID, Attempt: c.Attempts, Worker: "w",
		Code: "policy_stricter", Message: "needs 2 approvals", RequestTTL: time.Hour, Policy: &stricter,
		Data: map[string]any{"policy_version": "sha256:old", "new_policy_version": "sha256:new"}})
	if err != nil || !ok || round != 2 {
		t.Fatalf("Supersede = %d, %v, %v", round, ok, err)
	}
	got := must(b.RequestByID(ctx, req.ID))
	if got.Status != store.RequestPending || got.Round != 2 || got.Policy.Approvals != 2 || got.Policy.Version != "sha256:new" ||
		got.Policy.TierName != "large" || strings.Join(got.Policy.Approvers, ",") != "U1,U2,U3" {
		t.Fatalf("request = %s round %d policy %+v", got.Status, got.Round, got.Policy)
	}
	ev := lastEvent(t, b, req.ID, store.EventSuperseded)
	if ev.Data["code"] != "policy_stricter" || ev.Data["policy_version"] != "sha256:old" || ev.Data["new_policy_version"] != "sha256:new" {
		t.Errorf("superseded event data = %v", ev.Data)
	}
	if pending, err := b.PostPending(ctx, req.ID, 2); err != nil || !pending {
		t.Errorf("PostPending round 2 = %v, %v", pending, err)
	}
	if cb := callbacksOf(t, b, req.ID); len(cb) != 1 || cb[0] != store.CallbackNeedsReview {
		t.Errorf("callbacks = %v, want needs_review", cb)
	}
	// The new round is decided by the new policy: one approval is not enough.
	if first := vote(t, b, got, store.VerdictApprove, "U1", ""); !first.Cast || first.Decided {
		t.Fatalf("first approval in round 2 = %+v", first)
	}
	if second := vote(t, b, got, store.VerdictApprove, "U2", ""); !second.Decided || second.Request.Status != store.RequestApproved {
		t.Fatalf("second approval in round 2 = %+v", second)
	}
	// A supersede without a policy keeps the request's.
	c = claimOne(t, b, "w")
	if c.PolicyVersion != "sha256:new" || c.Round != 2 {
		t.Fatalf("claim of round 2: version %q round %d", c.PolicyVersion, c.Round)
	}
	if _, ok, err := b.Supersede(ctx, store.SupersedeParams{ExecutionID: c.ID, Attempt: c.Attempts, Worker: "w",
		Code: "approval_expired", RequestTTL: time.Hour}); err != nil || !ok {
		t.Fatalf("Supersede = %v, %v", ok, err)
	}
	if got := must(b.RequestByID(ctx, req.ID)); got.Round != 3 || got.Policy.Version != "sha256:new" || got.Policy.Approvals != 2 {
		t.Errorf("after a plain supersede: round %d policy %+v", got.Round, got.Policy)
	}
}

// A supersede with a denial settles the request in the new round: rejected
// by the policy, with its reason, no card posted for the round, a settled
// callback and no call for review; the audit has both versions.
func testSupersedeToDenied(t *testing.T, b *Backend) {
	ctx := context.Background()
	withCallbacks(t, b, "agent")
	req := approvedUnder(t, b, "wa_denied", "sha256:old")
	c := claimOne(t, b, "w")
	deny := store.Policy{Verdict: store.PolicyDeny, TierName: "frozen-accounts", Deny: "the account is frozen", Version: "sha256:new"}
	round, ok, err := b.Supersede(ctx, store.SupersedeParams{ExecutionID: c.ID, Attempt: c.Attempts, Worker: "w",
		Code: "policy_stricter", Message: "denied", RequestTTL: time.Hour, Policy: &deny,
		Denial: &store.AutoDecision{Verdict: store.VerdictReject, DecidedBy: "policy:frozen-accounts", Via: "policy",
			Reason: "the account is frozen", Data: map[string]any{"policy_version": "sha256:new"}},
		Data: map[string]any{"policy_version": "sha256:old", "new_policy_version": "sha256:new"}})
	if err != nil || !ok || round != 2 {
		t.Fatalf("Supersede = %d, %v, %v", round, ok, err)
	}
	got := must(b.RequestByID(ctx, req.ID))
	if got.Status != store.RequestRejected || got.Round != 2 || got.Policy.Verdict != store.PolicyDeny ||
		got.Policy.Deny != "the account is frozen" || got.Policy.Version != "sha256:new" {
		t.Fatalf("request = %s round %d policy %+v", got.Status, got.Round, got.Policy)
	}
	d, err := b.DecisionFor(ctx, req.ID, 2)
	if err != nil || d.Verdict != store.VerdictReject || d.DecidedBy != "policy:frozen-accounts" || d.Via != "policy" ||
		d.Reason != "the account is frozen" || d.PayloadHashSeen != req.PayloadHash {
		t.Fatalf("decision of round 2 = %+v, %v", d, err)
	}
	if kinds := strings.Join(eventKinds(t, b, req.ID), ","); kinds != "requested,decided,claimed,superseded,decided" {
		t.Errorf("events = %s", kinds)
	}
	sup := lastEvent(t, b, req.ID, store.EventSuperseded)
	if sup.Data["policy_version"] != "sha256:old" || sup.Data["new_policy_version"] != "sha256:new" || sup.Data["new_round"] != float64(2) {
		t.Errorf("superseded event data = %v", sup.Data)
	}
	if dec := lastEvent(t, b, req.ID, store.EventDecided); dec.Actor != "policy:frozen-accounts" || dec.Data["reason"] != "the account is frozen" ||
		dec.Data["policy_version"] != "sha256:new" {
		t.Errorf("decided event = %s %v", dec.Actor, dec.Data)
	}
	if pending, err := b.PostPending(ctx, req.ID, 2); err != nil || pending {
		t.Errorf("PostPending round 2 = %v, %v; want no card for a denied round", pending, err)
	}
	if n := b.Count(t, `SELECT count(*) FROM outbox WHERE round = 2`); n != 0 {
		t.Errorf("outbox rows of round 2 = %d, want none", n)
	}
	if state, err := b.CardState(ctx, req.ID, 1); err != nil || state != "superseded" {
		t.Errorf("CardState round 1 = %q, %v", state, err)
	}
	if cb := callbacksOf(t, b, req.ID); len(cb) != 1 || cb[0] != store.CallbackSettled {
		t.Errorf("callbacks = %v, want one settled", cb)
	}
	execs, err := b.ExecutionsFor(ctx, req.ID)
	if err != nil || len(execs) != 1 || execs[0].State != store.ExecSuperseded {
		t.Errorf("executions = %+v, %v; want the one superseded", execs, err)
	}
	// Nothing is left to claim, and a vote finds the round closed.
	if claims, err := b.ClaimExecutions(ctx, claimParams("w", 5)); err != nil || len(claims) != 0 {
		t.Errorf("claims after the denial = %d, %v", len(claims), err)
	}
	if v := vote(t, b, got, store.VerdictApprove, "U2", ""); v.Open || v.Cast {
		t.Errorf("a vote on the denied round = %+v", v)
	}
}
