package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
)

func newRequest(key, basis string) store.NewRequest {
	return store.NewRequest{
		Key: key, BasisHash: basis, RunID: "r", Step: []byte(`1`), Tool: "t",
		Snapshot: []byte(`{"a":1}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: time.Hour,
	}
}

func insertRequest(t *testing.T, s store.Store, key string) store.Request {
	t.Helper()
	req, inserted, err := s.InsertRequest(context.Background(), newRequest(key, "sha256:b"))
	if err != nil || !inserted {
		t.Fatalf("InsertRequest(%s) = %v, inserted %v", key, err, inserted)
	}
	return req
}
