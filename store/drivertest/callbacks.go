package drivertest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// withCallbacks names the agents whose requests queue callbacks.
func withCallbacks(t *testing.T, b *Backend, agents ...string) {
	t.Helper()
	l, ok := b.Store.(*store.Ledger)
	if !ok {
		t.Fatalf("the backend's store is a %T, not a *store.Ledger", b.Store)
	}
	l.SetCallbackAgents(agents...)
}

// callbacksOf returns the events of a request's queued callbacks, oldest first.
func callbacksOf(t *testing.T, b *Backend, requestID string) []store.CallbackEvent {
	t.Helper()
	n, err := b.QueryInt("SELECT count(*) FROM callbacks WHERE request_id = $1", requestID)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		return nil
	}
	latest, err := b.LatestCallback(context.Background(), requestID)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]store.CallbackEvent, n)
	out[n-1] = latest.Event
	return out
}

// testCallbacksQueueWithTheirTransition checks every transition that owes a
// callback queues exactly one, in its own transaction, and only for an agent
// that has a callback.
func testCallbacksQueueWithTheirTransition(t *testing.T, b *Backend) {
	ctx := context.Background()
	withCallbacks(t, b, "agent")
	expect := func(what, requestID string, want ...store.CallbackEvent) {
		t.Helper()
		got := callbacksOf(t, b, requestID)
		if len(got) != len(want) || (len(want) > 0 && got[len(got)-1] != want[len(want)-1]) {
			t.Errorf("%s: callbacks %v, want %v", what, got, want)
		}
	}

	pending := insertRequest(t, b, "wa_cb_pending")
	expect("a new request", pending.ID)
	rejected := insertRequest(t, b, "wa_cb_reject")
	if _, _, ok, err := b.Decide(ctx, decide(rejected, store.VerdictReject, "U1")); err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	expect("a rejection", rejected.ID, store.CallbackSettled)
	cancelled := insertRequest(t, b, "wa_cb_cancel")
	if _, ok, err := b.CancelRequest(ctx, cancelled.ID, "agent:agent", nil); err != nil || !ok {
		t.Fatalf("CancelRequest = %v, %v", ok, err)
	}
	expect("a cancel", cancelled.ID, store.CallbackSettled)
	expiring := insert(t, b, func() store.NewRequest { p := newRequest("wa_cb_expire", "sha256:b"); p.TTL = time.Second; return p }())
	later := time.Now().Add(time.Minute)
	if reqs, err := b.ExpireDue(ctx, &later, 10); err != nil || len(reqs) != 1 {
		t.Fatalf("ExpireDue = %d, %v", len(reqs), err)
	}
	expect("an expiry", expiring.ID, store.CallbackSettled)

	// An approval owes nothing; a retry nothing; success settles.
	req, _ := approved(t, b, "wa_cb_exec")
	expect("an approval", req.ID)
	c := claimOne(t, b, "w")
	p := store.TransitionParams{From: store.ExecClaimed, Worker: "w", Actor: "executor:w"}
	if _, err := b.TransitionExecutions(ctx, p, []store.Transition{{ExecutionID: c.ID, Attempt: c.Attempts, To: store.ExecReady}}); err != nil {
		t.Fatal(err)
	}
	expect("a retry", req.ID)
	c = claimOne(t, b, "w")
	if _, err := b.TransitionExecutions(ctx, p, []store.Transition{{ExecutionID: c.ID, Attempt: c.Attempts, To: store.ExecSucceeded, Status: 200}}); err != nil {
		t.Fatal(err)
	}
	expect("a success", req.ID, store.CallbackSettled)

	// An agent-executed write's approval is its agent's news; its reported
	// outcome settles it.
	agentWrite := insert(t, b, func() store.NewRequest {
		p := newRequest("wa_cb_agent", "sha256:b")
		p.Policy = store.Policy{Approvals: 1, Execute: store.ExecuteAgent}
		return p
	}())
	agentWrite, _, ok, err := b.Decide(ctx, decide(agentWrite, store.VerdictApprove, "U1"))
	if err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	if !agentWrite.Policy.AgentExecuted() {
		t.Errorf("the decided request's policy = %+v, want it frozen as agent-executed", agentWrite.Policy)
	}
	expect("an agent-executed approval", agentWrite.ID, store.CallbackApproved)
	if recorded, err := b.ReportOutcome(ctx, store.OutcomeParams{Request: agentWrite, To: store.ExecSucceeded, Actor: "agent:agent"}); err != nil || !recorded {
		t.Fatalf("ReportOutcome = %v, %v", recorded, err)
	}
	expect("an agent's outcome", agentWrite.ID, store.CallbackApproved, store.CallbackSettled)

	// needs_review asks for a person; resolving it settles.
	review, _ := approved(t, b, "wa_cb_review")
	c = toNeedsReview(t, b)
	expect("needs_review", review.ID, store.CallbackNeedsReview)
	if ok, err := b.Resolve(ctx, store.ResolveParams{RequestID: review.ID, ExecutionID: c.ID, To: store.ExecFailed, By: "U9"}); err != nil || !ok {
		t.Fatalf("Resolve = %v, %v", ok, err)
	}
	expect("a resolution to failed", review.ID, store.CallbackNeedsReview, store.CallbackSettled)

	// A superseded approval sends the request back to reviewers.
	back, _ := approved(t, b, "wa_cb_supersede")
	c = claimOne(t, b, "w")
	if _, ok, err := b.Supersede(ctx, store.SupersedeParams{ExecutionID: c.ID, Attempt: c.Attempts, Worker: "w",
		Code: "approval_expired", RequestTTL: time.Hour}); err != nil || !ok {
		t.Fatalf("Supersede = %v, %v", ok, err)
	}
	expect("a supersede", back.ID, store.CallbackNeedsReview)

	// An agent without a callback queues nothing.
	withCallbacks(t, b)
	quiet := insertRequest(t, b, "wa_cb_quiet")
	if _, _, ok, err := b.Decide(ctx, decide(quiet, store.VerdictReject, "U1")); err != nil || !ok {
		t.Fatalf("Decide = %v, %v", ok, err)
	}
	expect("a rejection for an agent without a callback", quiet.ID)
	if n := b.Count(t, "SELECT count(*) FROM callbacks WHERE agent <> 'agent'"); n != 0 {
		t.Errorf("%d callbacks for other agents", n)
	}
}

// testCallbackClaimRetryDeliverRedrive walks one delivery through its states.
func testCallbackClaimRetryDeliverRedrive(t *testing.T, b *Backend) {
	ctx := context.Background()
	withCallbacks(t, b, "agent")
	req := insertRequest(t, b, "wa_cb_life")
	if _, ok, err := b.RedriveCallback(ctx, req.ID); err != nil || ok {
		t.Errorf("RedriveCallback with no delivery = %v, %v; want false", ok, err)
	}
	if _, err := b.LatestCallback(ctx, req.ID); err != store.ErrNotFound {
		t.Errorf("LatestCallback with no delivery = %v, want ErrNotFound", err)
	}
	if _, ok, err := b.CancelRequest(ctx, req.ID, "agent:agent", nil); err != nil || !ok {
		t.Fatal(err)
	}
	if n, err := b.CountCallbackBacklog(ctx); err != nil || n != 1 {
		t.Errorf("backlog = %d, %v; want 1", n, err)
	}
	claimed, err := b.ClaimCallbacks(ctx, 10, time.Hour)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("ClaimCallbacks = %d, %v", len(claimed), err)
	}
	first := claimed[0]
	if first.Attempts != 1 || first.Event != store.CallbackSettled || first.Agent != "agent" || first.RequestID != req.ID ||
		len(first.DeliveryID) != 36 || first.GiveUpAt.Sub(first.CreatedAt) != store.CallbackRetryWindow {
		t.Errorf("claimed %+v", first)
	}
	if again, err := b.ClaimCallbacks(ctx, 10, time.Hour); err != nil || len(again) != 0 {
		t.Errorf("a leased delivery was claimed again: %d, %v", len(again), err)
	}
	if state, err := b.RetryCallback(ctx, store.RetryCallbackParams{Claimed: first, Status: 500, Reason: "answered 500"}); err != nil || state != store.CallbackPending {
		t.Fatalf("RetryCallback = %s, %v", state, err)
	}
	cb, err := b.LatestCallback(ctx, req.ID)
	if err != nil || cb.State != store.CallbackPending || cb.LastStatus == nil || *cb.LastStatus != 500 || cb.Attempts != 1 {
		t.Fatalf("after a retry: %+v, %v", cb, err)
	}
	claimed, err = b.ClaimCallbacks(ctx, 10, time.Hour)
	if err != nil || len(claimed) != 1 || claimed[0].Attempts != 2 || claimed[0].DeliveryID != first.DeliveryID {
		t.Fatalf("second claim = %+v, %v", claimed, err)
	}
	second := claimed[0]
	// The first attempt's outcome, arriving late, is no longer the row's.
	if err := b.MarkCallbackDelivered(ctx, first, 204); err != nil {
		t.Fatal(err)
	}
	if cb, err = b.LatestCallback(ctx, req.ID); err != nil || cb.State != store.CallbackPending {
		t.Fatalf("a superseded attempt marked the delivery: %+v, %v", cb, err)
	}
	if err := b.MarkCallbackDelivered(ctx, second, 204); err != nil {
		t.Fatal(err)
	}
	if cb, err = b.LatestCallback(ctx, req.ID); err != nil || cb.State != store.CallbackDelivered || *cb.LastStatus != 204 || cb.LastError != "" {
		t.Fatalf("after delivery: %+v, %v", cb, err)
	}
	if n, err := b.CountCallbackBacklog(ctx); err != nil || n != 0 {
		t.Errorf("backlog = %d, %v; want 0", n, err)
	}

	// A redrive sends the same delivery again, due now and with its
	// attempts (so its backoff) started again.
	before := time.Now()
	cb, ok, err := b.RedriveCallback(ctx, req.ID)
	if err != nil || !ok || cb.State != store.CallbackPending || cb.DeliveryID != first.DeliveryID || cb.Attempts != 0 {
		t.Fatalf("RedriveCallback = %+v, %v, %v", cb, ok, err)
	}
	if cb.NextAttemptAt.After(time.Now().Add(time.Second)) || cb.GiveUpAt.Before(before.Add(store.CallbackRetryWindow-time.Second)) ||
		cb.LastStatus == nil || *cb.LastStatus != 204 {
		t.Errorf("after the redrive: next attempt %s, give up %s, last status %v; want due now, a fresh window, 204 kept",
			cb.NextAttemptAt, cb.GiveUpAt, cb.LastStatus)
	}
	claimed, err = b.ClaimCallbacks(ctx, 10, time.Hour)
	if err != nil || len(claimed) != 1 || claimed[0].DeliveryID != first.DeliveryID || claimed[0].Attempts != 1 {
		t.Fatalf("claim after redrive = %+v, %v; want the delivery on its attempt 1", claimed, err)
	}
	third := claimed[0]

	// A redrive while an attempt is in flight is not lost when the attempt
	// then succeeds: the delivery stays due and is claimed again.
	if _, ok, err := b.RedriveCallback(ctx, req.ID); err != nil || !ok {
		t.Fatalf("RedriveCallback during an attempt = %v, %v", ok, err)
	}
	if err := b.MarkCallbackDelivered(ctx, third, 204); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RetryCallback(ctx, store.RetryCallbackParams{Claimed: third, Delay: time.Hour, Status: 500, Reason: "late"}); err != store.ErrNotFound {
		t.Errorf("RetryCallback of a redriven attempt = %v, want ErrNotFound", err)
	}
	claimed, err = b.ClaimCallbacks(ctx, 10, time.Hour)
	if err != nil || len(claimed) != 1 || claimed[0].DeliveryID != first.DeliveryID || claimed[0].Attempts != 1 {
		t.Fatalf("claim after a redrive during an attempt = %+v, %v", claimed, err)
	}
	fourth := claimed[0]

	// Past its retry window a failed attempt fails the delivery.
	if err := b.Exec("UPDATE callbacks SET give_up_at = created_at WHERE id = $1", first.ID); err != nil {
		t.Fatal(err)
	}
	if state, err := b.RetryCallback(ctx, store.RetryCallbackParams{Claimed: fourth, Delay: time.Minute, Reason: "connection refused"}); err != nil || state != store.CallbackFailed {
		t.Errorf("RetryCallback past the window = %s, %v; want failed", state, err)
	}
	if _, err := b.RetryCallback(ctx, store.RetryCallbackParams{Claimed: fourth, Delay: time.Minute, Reason: "again"}); err != store.ErrNotFound {
		t.Errorf("RetryCallback of a failed delivery = %v, want ErrNotFound", err)
	}
}

func testCallbackClaimsAreExclusiveUnderConcurrency(t *testing.T, b *Backend) {
	ctx := context.Background()
	withCallbacks(t, b, "agent")
	const rows, workers = 20, 5
	for i := range rows {
		req := insertRequest(t, b, "wa_cb_race_"+string(rune('a'+i)))
		if _, ok, err := b.CancelRequest(ctx, req.ID, "agent:agent", nil); err != nil || !ok {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	seen := make(map[int64]int)
	errs := make([]error, workers)
	Release(workers, func(i int) {
		for {
			claimed, err := b.ClaimCallbacks(ctx, 3, time.Hour)
			if err != nil || len(claimed) == 0 {
				errs[i] = err
				return
			}
			mu.Lock()
			for _, r := range claimed {
				seen[r.ID]++
			}
			mu.Unlock()
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("worker %d: %v", i, err)
		}
	}
	if len(seen) != rows {
		t.Errorf("%d rows claimed, want %d", len(seen), rows)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("row %d claimed %d times", id, n)
		}
	}
}

// testCallbackRenew: a renewal keeps the claim, and the renewed claim, not
// the one it replaced, identifies the attempt; a redrive ends the claim.
func testCallbackRenew(t *testing.T, b *Backend) {
	ctx := context.Background()
	withCallbacks(t, b, "agent")
	req := insertRequest(t, b, "wa_cb_renew")
	if _, ok, err := b.CancelRequest(ctx, req.ID, "agent:agent", nil); err != nil || !ok {
		t.Fatal(err)
	}
	claimed, err := b.ClaimCallbacks(ctx, 10, time.Millisecond)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("ClaimCallbacks = %d, %v", len(claimed), err)
	}
	time.Sleep(5 * time.Millisecond) // the lease has run out
	renewed, err := b.RenewCallback(ctx, claimed[0], time.Minute)
	if err != nil || !renewed.NextAttemptAt.After(claimed[0].NextAttemptAt) {
		t.Fatalf("RenewCallback = %v, %v; want a later lease than %v", renewed.NextAttemptAt, err, claimed[0].NextAttemptAt)
	}
	if again, err := b.ClaimCallbacks(ctx, 10, time.Minute); err != nil || len(again) != 0 {
		t.Fatalf("a renewed claim was claimed again: %d, %v", len(again), err)
	}
	if _, err := b.RenewCallback(ctx, claimed[0], time.Minute); err != store.ErrNotFound {
		t.Errorf("renewing with the replaced lease = %v, want ErrNotFound", err)
	}
	if err := b.MarkCallbackDelivered(ctx, renewed, 204); err != nil {
		t.Fatal(err)
	}
	if cb, err := b.LatestCallback(ctx, req.ID); err != nil || cb.State != store.CallbackDelivered {
		t.Fatalf("after delivering on the renewed claim: %+v, %v", cb, err)
	}
	if _, err := b.RenewCallback(ctx, renewed, time.Minute); err != store.ErrNotFound {
		t.Errorf("renewing a delivered callback = %v, want ErrNotFound", err)
	}
}
