package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

func insertRequest(t *testing.T, s store.Store, key string) store.Request {
	t.Helper()
	req, inserted, err := s.InsertRequest(context.Background(), store.NewRequest{
		Key: key, BasisHash: "sha256:b", RunID: "r", Step: []byte(`1`), Tool: "t",
		Snapshot: []byte(`{"a":1}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: time.Hour,
	})
	if err != nil || !inserted {
		t.Fatalf("InsertRequest(%s) = %v, inserted %v", key, err, inserted)
	}
	return req
}

func decide(req store.Request, verdict store.Verdict, by string) store.DecideParams {
	return store.DecideParams{
		RequestID: req.ID, Round: req.Round, PayloadHash: req.PayloadHash, Verdict: verdict,
		DecidedBy: by, Via: "slack", MaxAttempts: 3,
	}
}
