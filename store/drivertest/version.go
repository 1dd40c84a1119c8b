package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// versionOf reads the request's version.
func versionOf(t *testing.T, s store.Store, id string) int64 {
	t.Helper()
	req, err := s.RequestByID(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return req.Version
}

// testVersionGrowsOnEveryVisibleChange walks a request through every kind of
// move an agent can see and checks each one raises its version, and that a
// move it cannot see (a lease of an unknown) does not.
func testVersionGrowsOnEveryVisibleChange(t *testing.T, b *Backend) {
	ctx := context.Background()
	req := insertRequest(t, b, "wa_version")
	if req.Version != 1 {
		t.Fatalf("new request version = %d, want 1", req.Version)
	}
	last := req.Version
	step := func(what string) {
		t.Helper()
		v := versionOf(t, b, req.ID)
		if v <= last {
			t.Fatalf("after %s version = %d, want more than %d", what, v, last)
		}
		last = v
	}
	decided, _, ok, err := b.Decide(ctx, decide(req, store.VerdictApprove, "U1"))
	if err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	if decided.Version <= last {
		t.Errorf("Decide returned version %d, want more than %d", decided.Version, last)
	}
	step("approve")
	c := claimOne(t, b, "w")
	step("claim")
	p := store.TransitionParams{From: store.ExecClaimed, Worker: "w", Actor: "executor:w"}
	if _, err := b.TransitionExecutions(ctx, p, []store.Transition{{ExecutionID: c.ID, Attempt: c.Attempts,
		To: store.ExecReady, Status: 503, Code: "service_unavailable", Event: "retry"}}); err != nil {
		t.Fatal(err)
	}
	step("retry")
	c = claimOne(t, b, "w")
	step("second claim")
	if _, ok, err := b.Supersede(ctx, store.SupersedeParams{ExecutionID: c.ID, Attempt: c.Attempts, Worker: "w",
		Code: "approval_expired", RequestTTL: time.Hour}); err != nil || !ok {
		t.Fatalf("Supersede = %v, %v", ok, err)
	}
	step("supersede")
	round2, err := b.RequestByID(ctx, req.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := b.Decide(ctx, decide(round2, store.VerdictApprove, "U2")); err != nil || !ok {
		t.Fatalf("Decide round 2 = %v, %v", ok, err)
	}
	step("approve round 2")
	c = toNeedsReview(t, b)
	step("needs review")
	if ok, err := b.Resolve(ctx, store.ResolveParams{RequestID: req.ID, ExecutionID: c.ID, To: store.ExecSucceeded, By: "U9"}); err != nil || !ok {
		t.Fatalf("Resolve = %v, %v", ok, err)
	}
	step("resolve")

	// A claim that times out becomes unknown (visible); leasing it is not.
	other, _ := approved(t, b, "wa_version_unknown")
	claimOne(t, b, "w")
	past := time.Now().Add(time.Hour)
	if n, err := b.ExpireClaims(ctx, &past, 10); err != nil || n != 1 {
		t.Fatalf("ExpireClaims = %d, %v", n, err)
	}
	before := versionOf(t, b, other.ID)
	if leased, err := b.LeaseUnknowns(ctx, store.LeaseUnknownsParams{Now: &past, Lease: time.Minute, Limit: 10}); err != nil || len(leased) != 1 {
		t.Fatalf("LeaseUnknowns = %d, %v", len(leased), err)
	}
	if v := versionOf(t, b, other.ID); v != before {
		t.Errorf("a lease moved the version from %d to %d", before, v)
	}

	cancelled := insertRequest(t, b, "wa_version_cancel")
	if got, ok, err := b.CancelRequest(ctx, cancelled.ID, "agent:a", nil); err != nil || !ok || got.Version != 2 {
		t.Errorf("CancelRequest = version %d, %v, %v; want 2", got.Version, ok, err)
	}
	expiring := insert(t, b, func() store.NewRequest {
		p := newRequest("wa_version_expire", "sha256:b")
		p.TTL = time.Second
		return p
	}())
	later := time.Now().Add(time.Minute)
	if reqs, err := b.ExpireDue(ctx, &later, 10); err != nil || len(reqs) != 1 || reqs[0].Version != expiring.Version+1 {
		t.Errorf("ExpireDue = %+v, %v; want one request at version %d", reqs, err, expiring.Version+1)
	}
}
