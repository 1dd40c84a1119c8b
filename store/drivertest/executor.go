package drivertest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

func testClaimsAreExclusiveUnderConcurrency(t *testing.T, b *Backend) {
	ctx := context.Background()
	const executions, claimers = 40, 6
	for i := range executions {
		approved(t, b, fmt.Sprintf("wa_claim_%02d", i))
	}
	var mu sync.Mutex
	claimedBy := make(map[int64][]string)
	errs := make([]error, claimers)
	Release(claimers, func(i int) {
		worker := fmt.Sprintf("w%d", i)
		for {
			claims, err := b.ClaimExecutions(ctx, claimParams(worker, 3))
			if err != nil {
				errs[i] = err
				return
			}
			if len(claims) == 0 {
				return
			}
			mu.Lock()
			for _, c := range claims {
				claimedBy[c.ID] = append(claimedBy[c.ID], worker)
				if c.State != store.ExecClaimed || c.Attempts != 1 || *c.ClaimedBy != worker || c.Round != 1 ||
					!c.ClaimExpiresAt.Equal(c.DBNow.Add(time.Minute)) {
					errs[i] = fmt.Errorf("claim %+v", c)
				}
			}
			mu.Unlock()
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("claimer %d: %v", i, err)
		}
	}
	if len(claimedBy) != executions {
		t.Errorf("%d executions claimed, want %d", len(claimedBy), executions)
	}
	for id, workers := range claimedBy {
		if len(workers) != 1 {
			t.Errorf("execution %d claimed by %v", id, workers)
		}
	}
	if n := b.Count(t, `SELECT count(*) FROM events WHERE kind = 'claimed'`); n != executions {
		t.Errorf("claimed events = %d, want %d", n, executions)
	}
}

func testClaimSkipsOtherToolsAndFutureRows(t *testing.T, b *Backend) {
	ctx := context.Background()
	approved(t, b, "wa_tool")
	other := store.ClaimParams{Worker: "w", Limit: 5, ClaimTimeouts: map[string]time.Duration{"other.tool": time.Minute}}
	if claims, err := b.ClaimExecutions(ctx, other); err != nil || len(claims) != 0 {
		t.Errorf("claim of another tool = %d, %v", len(claims), err)
	}
	past := time.Now().Add(-time.Hour)
	early := claimParams("w", 5)
	early.Now = &past
	if claims, err := b.ClaimExecutions(ctx, early); err != nil || len(claims) != 0 {
		t.Errorf("claim before the row is due = %d, %v", len(claims), err)
	}
	// What no claim of other.tool takes is counted as its tool's ready rows.
	ready, err := b.ReadyByTool(ctx)
	if err != nil || len(ready) != 1 || ready[0].Count != 1 || ready[0].Tool == "other.tool" {
		t.Errorf("ReadyByTool = %+v, %v; want the one row of the approved tool", ready, err)
	}
	claimOne(t, b, "w")
	if ready, err := b.ReadyByTool(ctx); err != nil || len(ready) != 0 {
		t.Errorf("ReadyByTool once claimed = %+v, %v; want none", ready, err)
	}
}

func testTransitionHonoursFromWorkerAndAttempt(t *testing.T, b *Backend) {
	ctx := context.Background()
	req, _ := approved(t, b, "wa_transition")
	c := claimOne(t, b, "w1")
	ok := store.Transition{ExecutionID: c.ID, Attempt: c.Attempts, To: store.ExecSucceeded,
		Status: 200, Body: []byte(`{"ok":true}`), ProviderRef: "ch_1",
		EventData: map[string]any{"provider_ref": "ch_1"}}
	staleAttempt := ok
	staleAttempt.Attempt = c.Attempts + 1
	for _, tc := range []struct {
		name string
		p    store.TransitionParams
		t    store.Transition
	}{
		{"wrong from", store.TransitionParams{From: store.ExecReady, Actor: "x"}, ok},
		{"wrong worker", store.TransitionParams{From: store.ExecClaimed, Worker: "w2", Actor: "x"}, ok},
		{"stale attempt", store.TransitionParams{From: store.ExecClaimed, Worker: "w1", Actor: "x"}, staleAttempt},
	} {
		applied, err := b.TransitionExecutions(ctx, tc.p, []store.Transition{tc.t})
		if err != nil || len(applied) != 0 {
			t.Errorf("%s: applied %v, %v; want nothing", tc.name, applied, err)
		}
	}
	applied, err := b.TransitionExecutions(ctx, store.TransitionParams{From: store.ExecClaimed, Worker: "w1", Actor: "executor:w1"},
		[]store.Transition{ok})
	if err != nil || len(applied) != 1 || applied[0].ExecutionID != c.ID || applied[0].RequestID != req.ID || applied[0].Round != 1 {
		t.Fatalf("applied = %+v, %v", applied, err)
	}
	e, err := b.LatestExecution(ctx, req.ID)
	if err != nil || e.State != store.ExecSucceeded || e.ClaimedBy != nil || e.ClaimExpiresAt != nil ||
		*e.ResponseStatus != 200 || string(e.ResponseBody) != `{"ok":true}` || *e.ProviderRef != "ch_1" || e.LastCode != nil {
		t.Fatalf("execution = %+v, %v", e, err)
	}
	// Applied once: the same transition again finds the row moved on.
	if again, err := b.TransitionExecutions(ctx, store.TransitionParams{From: store.ExecClaimed, Actor: "x"}, []store.Transition{ok}); err != nil || len(again) != 0 {
		t.Errorf("repeat = %v, %v", again, err)
	}
	if kinds := eventKinds(t, b, req.ID); strings.Join(kinds, ",") != "requested,decided,claimed,succeeded" {
		t.Errorf("events = %v", kinds)
	}
	if state, err := b.CardState(ctx, req.ID, 1); err != nil || state != "approved/succeeded/1" {
		t.Errorf("CardState = %q, %v", state, err)
	}
}

func testTransitionRetryKeepsResponse(t *testing.T, b *Backend) {
	ctx := context.Background()
	req, _ := approved(t, b, "wa_retry")
	c := claimOne(t, b, "w")
	now := c.DBNow
	// AsyncCommit may lose the outcome with the machine, never change it.
	applied, err := b.TransitionExecutions(ctx, store.TransitionParams{From: store.ExecClaimed, Worker: "w", Actor: "executor:w", Now: &now, AsyncCommit: true},
		[]store.Transition{{ExecutionID: c.ID, Attempt: c.Attempts, To: store.ExecReady, Status: 503, Code: "provider_5xx",
			Error: "unavailable", Delay: time.Hour}})
	if err != nil || len(applied) != 1 {
		t.Fatalf("applied = %v, %v", applied, err)
	}
	e, err := b.LatestExecution(ctx, req.ID)
	if err != nil || e.State != store.ExecReady || *e.ResponseStatus != 503 || e.ResponseBody != nil ||
		*e.LastCode != "provider_5xx" || *e.LastError != "unavailable" || !e.NextAttemptAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("execution = %+v, %v", e, err)
	}
	// A retry is said in the card, not in its thread: only a failure or a
	// call for a person is (the Ledger's rule, whoever moves the row).
	if n := b.Count(t, `SELECT count(*) FROM outbox WHERE kind = 'thread_reply'`); n != 0 {
		t.Errorf("thread replies = %d, want 0", n)
	}
	// Not due for an hour.
	if claims, err := b.ClaimExecutions(ctx, claimParams("w", 5)); err != nil || len(claims) != 0 {
		t.Errorf("claims before the delay = %d, %v", len(claims), err)
	}
}

func testSupersedeReopensTheRequestInANewRound(t *testing.T, b *Backend) {
	ctx := context.Background()
	req, _ := approved(t, b, "wa_supersede")
	if !req.RoundStartedAt.Equal(req.CreatedAt) {
		t.Errorf("first round started at %v, created at %v; want the same", req.RoundStartedAt, req.CreatedAt)
	}
	c := claimOne(t, b, "w")
	p := store.SupersedeParams{ExecutionID: c.ID, Attempt: c.Attempts, Worker: "other", Code: "approval_expired",
		Message: "too old", RequestTTL: time.Hour}
	if round, ok, err := b.Supersede(ctx, p); err != nil || ok || round != 0 {
		t.Fatalf("Supersede by another worker = %d, %v, %v", round, ok, err)
	}
	p.Worker = "w"
	round, ok, err := b.Supersede(ctx, p)
	if err != nil || !ok || round != 2 {
		t.Fatalf("Supersede = %d, %v, %v", round, ok, err)
	}
	got, err := b.RequestByID(ctx, req.ID)
	if err != nil || got.Status != store.RequestPending || got.Round != 2 || got.ExpiresAt.Before(got.UpdatedAt.Add(time.Hour)) {
		t.Fatalf("request = %s round %d expires %v, %v", got.Status, got.Round, got.ExpiresAt, err)
	}
	if !got.RoundStartedAt.Equal(got.UpdatedAt) || got.RoundStartedAt.Before(req.CreatedAt) {
		t.Errorf("round 2 started at %v; want its reopening, %v", got.RoundStartedAt, got.UpdatedAt)
	}
	e, err := b.LatestExecution(ctx, req.ID)
	if err != nil || e.State != store.ExecSuperseded || *e.LastCode != "approval_expired" || e.ClaimedBy != nil {
		t.Fatalf("execution = %+v, %v", e, err)
	}
	for rnd, want := range map[int]string{1: "superseded", 2: "pending"} {
		if state, err := b.CardState(ctx, req.ID, rnd); err != nil || state != want {
			t.Errorf("CardState round %d = %q, %v; want %q", rnd, state, err, want)
		}
	}
	if pending, err := b.PostPending(ctx, req.ID, 2); err != nil || !pending {
		t.Errorf("PostPending round 2 = %v, %v", pending, err)
	}
	// The new round is decided afresh, and its approval makes a new execution.
	got2, d2, ok, err := b.Decide(ctx, decide(got, store.VerdictApprove, "U2"))
	if err != nil || !ok || d2.Round != 2 || got2.Round != 2 {
		t.Fatalf("Decide round 2 = %v, %v", ok, err)
	}
	execs, err := b.ExecutionsFor(ctx, req.ID)
	if err != nil || len(execs) != 2 || execs[1].State != store.ExecReady {
		t.Errorf("executions = %d, %v", len(execs), err)
	}
}

func testResolveNeedsReview(t *testing.T, b *Backend) {
	ctx := context.Background()
	req, _ := approved(t, b, "wa_resolve")
	c := toNeedsReview(t, b)
	if unknown, review, err := b.CountUnsettled(ctx); err != nil || unknown != 0 || review != 1 {
		t.Errorf("CountUnsettled = %d, %d, %v", unknown, review, err)
	}
	p := store.ResolveParams{RequestID: strings.ToUpper(req.ID), ExecutionID: c.ID, To: store.ExecReady, Action: "resend", By: "U9"}
	ok, err := b.Resolve(ctx, p)
	if err != nil || !ok {
		t.Fatalf("Resolve = %v, %v", ok, err)
	}
	e, err := b.LatestExecution(ctx, req.ID)
	if err != nil || e.State != store.ExecReady || e.MaxAttempts != 3 || *e.LastCode != "ambiguous" {
		t.Fatalf("execution = %+v, %v", e, err)
	}
	if ok, err := b.Resolve(ctx, p); err != nil || ok {
		t.Errorf("Resolve again = %v, %v; want false", ok, err)
	}
	for _, missing := range []store.ResolveParams{
		{RequestID: req.ID, ExecutionID: c.ID + 1000, To: store.ExecFailed},
		{RequestID: "00000000-0000-4000-8000-000000000000", ExecutionID: c.ID, To: store.ExecFailed},
		{RequestID: "wa_resolve", ExecutionID: c.ID, To: store.ExecFailed},
	} {
		if _, err := b.Resolve(ctx, missing); err != store.ErrNotFound {
			t.Errorf("Resolve(%s, %d) = %v, want ErrNotFound", missing.RequestID, missing.ExecutionID, err)
		}
	}
	// Exhaust the cap, then resolve to ready again: the cap rises by one.
	for range 2 {
		toNeedsReview(t, b)
		if ok, err := b.Resolve(ctx, store.ResolveParams{RequestID: req.ID, ExecutionID: c.ID, To: store.ExecReady, By: "U9"}); err != nil || !ok {
			t.Fatalf("Resolve = %v, %v", ok, err)
		}
	}
	if e, _ := b.LatestExecution(ctx, req.ID); e.Attempts != 3 || e.MaxAttempts != 4 {
		t.Errorf("attempts %d of %d, want 3 of 4", e.Attempts, e.MaxAttempts)
	}
	if n := countKind(eventKinds(t, b, req.ID), "resolved"); n != 3 {
		t.Errorf("resolved events = %d, want 3", n)
	}
}

func testExpiredClaimsBecomeUnknownAndAreLeased(t *testing.T, b *Backend) {
	ctx := context.Background()
	req, _ := approved(t, b, "wa_unknown")
	c := claimOne(t, b, "w")
	before := c.ClaimExpiresAt.Add(-time.Microsecond)
	if n, err := b.ExpireClaims(ctx, &before, 10); err != nil || n != 0 {
		t.Fatalf("ExpireClaims before timeout = %d, %v", n, err)
	}
	at := *c.ClaimExpiresAt
	if n, err := b.ExpireClaims(ctx, &at, 10); err != nil || n != 1 {
		t.Fatalf("ExpireClaims = %d, %v", n, err)
	}
	e, err := b.LatestExecution(ctx, req.ID)
	if err != nil || e.State != store.ExecUnknown || *e.LastCode != "claim_timeout" || e.ClaimedBy != nil || !e.NextAttemptAt.Equal(at) {
		t.Fatalf("execution = %+v, %v", e, err)
	}
	events, _ := b.EventsFor(ctx, req.ID)
	if last := events[len(events)-1]; last.Kind != "unknown" || last.Data["held_by"] != "w" {
		t.Errorf("last event = %+v", last)
	}
	leased, err := b.LeaseUnknowns(ctx, store.LeaseUnknownsParams{Now: &at, Lease: time.Minute, Limit: 10})
	if err != nil || len(leased) != 1 || leased[0].ID != c.ID || !leased[0].DBNow.Equal(at) ||
		!leased[0].NextAttemptAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("LeaseUnknowns = %+v, %v", leased, err)
	}
	// Leased: another reconciler within the lease gets nothing.
	if again, err := b.LeaseUnknowns(ctx, store.LeaseUnknownsParams{Now: &at, Lease: time.Minute, Limit: 10}); err != nil || len(again) != 0 {
		t.Errorf("second lease = %d, %v", len(again), err)
	}
	if unknown, review, err := b.CountUnsettled(ctx); err != nil || unknown != 1 || review != 0 {
		t.Errorf("CountUnsettled = %d, %d, %v", unknown, review, err)
	}
}

func testTransitionBatchAppliesOnlyTheRowsThatMatch(t *testing.T, b *Backend) {
	ctx := context.Background()
	for _, key := range []string{"wa_batch_a", "wa_batch_b", "wa_batch_c"} {
		approved(t, b, key)
	}
	claims, err := b.ClaimExecutions(ctx, claimParams("w", 10))
	if err != nil || len(claims) != 3 {
		t.Fatalf("ClaimExecutions = %d, %v", len(claims), err)
	}
	ts := make([]store.Transition, len(claims))
	for i, c := range claims {
		ts[i] = store.Transition{ExecutionID: c.ID, Attempt: c.Attempts, To: store.ExecFailed, Code: "declined"}
	}
	ts[1].Attempt++ // this worker's view of the second row is stale
	applied, err := b.TransitionExecutions(ctx, store.TransitionParams{From: store.ExecClaimed, Worker: "w", Actor: "executor:w"}, ts)
	if err != nil || len(applied) != 2 {
		t.Fatalf("applied = %+v, %v; want 2", applied, err)
	}
	got := map[int64]bool{applied[0].ExecutionID: true, applied[1].ExecutionID: true}
	if !got[claims[0].ID] || !got[claims[2].ID] || got[claims[1].ID] {
		t.Errorf("applied %v, want executions %d and %d", got, claims[0].ID, claims[2].ID)
	}
	failed, failedEvents := 0, 0
	for _, c := range claims {
		if e, err := b.LatestExecution(ctx, c.RequestID); err != nil {
			t.Fatal(err)
		} else if e.State == store.ExecFailed {
			failed++
		}
		events, err := b.EventsFor(ctx, c.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			if e.Kind == "failed" && e.Actor == "executor:w" {
				failedEvents++
			}
		}
	}
	if failed != 2 {
		t.Errorf("failed executions = %d, want 2", failed)
	}
	if n := b.Count(t, `SELECT count(*) FROM outbox WHERE kind = 'thread_reply'`); n != 2 {
		t.Errorf("thread replies = %d, want 2", n)
	}
	if failedEvents != 2 {
		t.Errorf("failed events = %d, want 2", failedEvents)
	}
}
