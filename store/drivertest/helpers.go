package drivertest

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

// tool is the tool every test request uses; workers claim it.
const tool = "t"

func newRequest(key, basis string) store.NewRequest {
	return store.NewRequest{
		Key: key, BasisHash: basis, RunID: "r", Step: []byte(`1`), Tool: tool,
		Snapshot: []byte(`{"a":1}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: time.Hour,
	}
}

func insertRequest(t *testing.T, s store.Store, key string) store.Request {
	t.Helper()
	return insert(t, s, newRequest(key, "sha256:b"))
}

func insert(t *testing.T, s store.Store, p store.NewRequest) store.Request {
	t.Helper()
	req, inserted, err := s.InsertRequest(context.Background(), p)
	if err != nil || !inserted {
		t.Fatalf("InsertRequest(%s) = %v, inserted %v", p.Key, err, inserted)
	}
	return req
}

func decide(req store.Request, verdict store.Verdict, by string) store.DecideParams {
	return store.DecideParams{
		RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash, Verdict: verdict,
		DecidedBy: by, Via: "slack", MaxAttempts: 3,
	}
}

// approved inserts a request and approves it; its execution is ready.
func approved(t *testing.T, s store.Store, key string) (store.Request, store.Decision) {
	t.Helper()
	req, d, ok, err := s.Decide(context.Background(), decide(insertRequest(t, s, key), store.VerdictApprove, "U1"))
	if err != nil || !ok {
		t.Fatalf("Decide(%s) = %v, decided %v", key, err, ok)
	}
	return req, d
}

func claimParams(worker string, limit int) store.ClaimParams {
	return store.ClaimParams{Worker: worker, Limit: limit, ClaimTimeouts: map[string]time.Duration{tool: time.Minute}}
}

// claimOne claims the single ready execution.
func claimOne(t *testing.T, s store.Store, worker string) store.Claim {
	t.Helper()
	claims, err := s.ClaimExecutions(context.Background(), claimParams(worker, 10))
	if err != nil || len(claims) != 1 {
		t.Fatalf("ClaimExecutions = %d claims, %v; want 1", len(claims), err)
	}
	return claims[0]
}

// toNeedsReview claims the request's ready execution and moves it to
// needs_review.
func toNeedsReview(t *testing.T, s store.Store) store.Claim {
	t.Helper()
	c := claimOne(t, s, "w")
	applied, err := s.TransitionExecutions(context.Background(),
		store.TransitionParams{From: store.ExecClaimed, Worker: "w", Actor: "executor:w"},
		[]store.Transition{{ExecutionID: c.ID, Attempt: c.Attempts, To: store.ExecNeedsReview, Code: "ambiguous"}})
	if err != nil || len(applied) != 1 {
		t.Fatalf("to needs_review: %v, %v", applied, err)
	}
	return c
}

func eventKinds(t *testing.T, s store.Store, requestID string) []string {
	t.Helper()
	events, err := s.EventsFor(context.Background(), requestID)
	if err != nil {
		t.Fatal(err)
	}
	kinds := make([]string, len(events))
	for i, e := range events {
		kinds[i] = string(e.Kind)
	}
	return kinds
}

// countKind counts kind among kinds.
func countKind(kinds []string, kind string) int {
	n := 0
	for _, k := range kinds {
		if k == kind {
			n++
		}
	}
	return n
}
