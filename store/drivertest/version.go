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

// bumpWatch follows one request's version and its waiters' wake-ups: a
// long-poll re-reads only when woken, so every move that raises the version
// must wake the request's subscribers when it commits.
type bumpWatch struct {
	t      *testing.T
	s      store.Store
	id     string
	last   int64
	change <-chan struct{}
}

// watchBumps subscribes to req's changes; the subscription ends with the test.
func watchBumps(t *testing.T, b *Backend, n store.Notifier, req store.Request) *bumpWatch {
	change, stop := n.SubscribeChange(req.ID)
	t.Cleanup(stop)
	return &bumpWatch{t: t, s: b, id: req.ID, last: versionOf(t, b, req.ID), change: change}
}

// before forgets wake-ups already delivered, so the next step's is its own.
func (w *bumpWatch) before() {
	for {
		select {
		case <-w.change:
		default:
			return
		}
	}
}

// moved checks that what just committed raised the version and woke the
// request's subscribers.
func (w *bumpWatch) moved(what string) {
	w.t.Helper()
	v := versionOf(w.t, w.s, w.id)
	if v <= w.last {
		w.t.Fatalf("after %s version = %d, want more than %d", what, v, w.last)
	}
	w.last = v
	waitWake(w.t, w.change, what+" (it raised the version)")
}

// testVersionGrowsOnEveryVisibleChange walks a request through every kind of
// move an agent can see and checks each one raises its version and wakes
// the request's waiters, and that a move it cannot see (a lease of an
// unknown) does not raise it.
func testVersionGrowsOnEveryVisibleChange(t *testing.T, b *Backend) {
	ctx := context.Background()
	n := b.Notifier(t)
	req := insertRequest(t, b, "wa_version")
	if req.Version != 1 {
		t.Fatalf("new request version = %d, want 1", req.Version)
	}
	w := watchBumps(t, b, n, req)
	last := req.Version
	step := func(what string) {
		t.Helper()
		w.moved(what)
		last = w.last
	}
	w.before()
	decided, _, ok, err := b.Decide(ctx, decide(req, store.VerdictApprove, "U1"))
	if err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	if decided.Version <= last {
		t.Errorf("Decide returned version %d, want more than %d", decided.Version, last)
	}
	step("approve")
	w.before()
	c := claimOne(t, b, "w")
	step("claim")
	p := store.TransitionParams{From: store.ExecClaimed, Worker: "w", Actor: "executor:w"}
	w.before()
	if _, err := b.TransitionExecutions(ctx, p, []store.Transition{{ExecutionID: c.ID, Attempt: c.Attempts,
		To: store.ExecReady, Status: 503, Code: "service_unavailable"}}); err != nil {
		t.Fatal(err)
	}
	step("retry")
	w.before()
	c = claimOne(t, b, "w")
	step("second claim")
	// An outcome recorded without waiting for the disk takes another path.
	w.before()
	if _, err := b.TransitionExecutions(ctx, store.TransitionParams{From: store.ExecClaimed, Worker: "w", Actor: "executor:w", AsyncCommit: true},
		[]store.Transition{{ExecutionID: c.ID, Attempt: c.Attempts, To: store.ExecReady, Status: 503, Code: "service_unavailable"}}); err != nil {
		t.Fatal(err)
	}
	step("retry committed asynchronously")
	w.before()
	c = claimOne(t, b, "w")
	step("third claim")
	w.before()
	if _, ok, err := b.Supersede(ctx, store.SupersedeParams{ExecutionID: c.ID, Attempt: c.Attempts, Worker: "w",
		Code: "approval_expired", RequestTTL: time.Hour}); err != nil || !ok {
		t.Fatalf("Supersede = %v, %v", ok, err)
	}
	step("supersede")
	round2, err := b.RequestByID(ctx, req.ID)
	if err != nil {
		t.Fatal(err)
	}
	w.before()
	if _, _, ok, err := b.Decide(ctx, decide(round2, store.VerdictApprove, "U2")); err != nil || !ok {
		t.Fatalf("Decide round 2 = %v, %v", ok, err)
	}
	step("approve round 2")
	w.before()
	c = toNeedsReview(t, b)
	step("needs review")
	w.before()
	if ok, err := b.Resolve(ctx, store.ResolveParams{RequestID: req.ID, ExecutionID: c.ID, To: store.ExecSucceeded, By: "U9"}); err != nil || !ok {
		t.Fatalf("Resolve = %v, %v", ok, err)
	}
	step("resolve")

	// A claim that times out becomes unknown (visible); leasing it is not.
	other, _ := approved(t, b, "wa_version_unknown")
	ow := watchBumps(t, b, n, other)
	ow.before()
	claimOne(t, b, "w")
	ow.moved("a claim")
	past := time.Now().Add(time.Hour)
	ow.before()
	if n, err := b.ExpireClaims(ctx, &past, 10); err != nil || n != 1 {
		t.Fatalf("ExpireClaims = %d, %v", n, err)
	}
	ow.moved("a claim's expiry")
	before := versionOf(t, b, other.ID)
	if leased, err := b.LeaseUnknowns(ctx, store.LeaseUnknownsParams{Now: &past, Lease: time.Minute, Limit: 10}); err != nil || len(leased) != 1 {
		t.Fatalf("LeaseUnknowns = %d, %v", len(leased), err)
	}
	if v := versionOf(t, b, other.ID); v != before {
		t.Errorf("a lease moved the version from %d to %d", before, v)
	}

	cancelled := insertRequest(t, b, "wa_version_cancel")
	cw := watchBumps(t, b, n, cancelled)
	cw.before()
	if got, ok, err := b.CancelRequest(ctx, cancelled.ID, "agent:a", nil); err != nil || !ok || got.Version != 2 {
		t.Errorf("CancelRequest = version %d, %v, %v; want 2", got.Version, ok, err)
	}
	cw.moved("a cancel")
	expiring := insert(t, b, func() store.NewRequest {
		p := newRequest("wa_version_expire", "sha256:b")
		p.TTL = time.Second
		return p
	}())
	ew := watchBumps(t, b, n, expiring)
	ew.before()
	later := time.Now().Add(time.Minute)
	if reqs, err := b.ExpireDue(ctx, &later, 10); err != nil || len(reqs) != 1 || reqs[0].Version != expiring.Version+1 {
		t.Errorf("ExpireDue = %+v, %v; want one request at version %d", reqs, err, expiring.Version+1)
	}
	ew.moved("an expiry")

	// Votes: one that leaves the round open, the one that meets the policy,
	// and a reject.
	quorum := insertWithPolicy(t, b, "wa_version_quorum", 2)
	qw := watchBumps(t, b, n, quorum)
	qw.before()
	if res := vote(t, b, quorum, store.VerdictApprove, "U1", ""); !res.Cast || res.Decided {
		t.Fatalf("first of two approvals = %+v", res)
	}
	qw.moved("a vote that leaves the round open")
	qw.before()
	if res := vote(t, b, quorum, store.VerdictApprove, "U2", ""); !res.Decided {
		t.Fatalf("second of two approvals = %+v", res)
	}
	qw.moved("the vote that meets the policy")
	rejected := insertRequest(t, b, "wa_version_reject")
	rw := watchBumps(t, b, n, rejected)
	rw.before()
	if res := vote(t, b, rejected, store.VerdictReject, "U1", "no"); !res.Decided {
		t.Fatalf("reject = %+v", res)
	}
	rw.moved("a reject")
}
