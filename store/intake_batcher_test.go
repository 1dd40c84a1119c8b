package store_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/storetest"
)

func newRequest(key, basis string) store.NewRequest {
	return store.NewRequest{
		Key: key, BasisHash: basis, RunID: "r", Step: []byte(`1`), Tool: "t",
		Snapshot: []byte(`{"a":1}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: 3600e6,
	}
}

func TestInsertRequestsMixesNewAndExistingKeys(t *testing.T) {
	t.Parallel()
	tx := storetest.Tx(t)
	ctx := context.Background()
	existing := insertRequest(t, tx, "wa_existing")
	results, err := store.InsertRequests(ctx, tx, []store.NewRequest{
		newRequest("wa_new_1", "sha256:b"), newRequest("wa_existing", "sha256:b"), newRequest("wa_new_2", "sha256:b"),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 || !results[0].Inserted || results[1].Inserted || !results[2].Inserted {
		t.Fatalf("results = %+v", results)
	}
	if results[0].Key != "wa_new_1" || results[1].ID != existing.ID || results[2].Key != "wa_new_2" {
		t.Errorf("results out of order: %s %s %s", results[0].Key, results[1].Key, results[2].Key)
	}
	var events, outbox int
	if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM outbox)`).Scan(&events, &outbox); err != nil {
		t.Fatal(err)
	}
	// One event and one card post per request; the existing key's post is
	// still queued, so it is not re-driven.
	if events != 3 || outbox != 3 {
		t.Errorf("events %d, outbox %d; want 3 and 3", events, outbox)
	}
}

func TestIntakeBatcherConcurrentInserts(t *testing.T) {
	t.Parallel()
	db := storetest.NewDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	batcher := store.NewIntakeBatcher(db, 2, 8)
	go batcher.Run(ctx)

	// 40 distinct keys, each sent by 3 callers at once: 120 calls.
	const keys, callers = 40, 3
	type outcome struct {
		id       string
		inserted bool
		err      error
	}
	outcomes := make([][callers]outcome, keys)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for k := range keys {
		for c := range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				req, inserted, err := batcher.Insert(ctx, newRequest(fmt.Sprintf("wa_batch_%02d", k), "sha256:b"))
				outcomes[k][c] = outcome{req.ID, inserted, err}
			}()
		}
	}
	close(start)
	wg.Wait()
	for k := range keys {
		inserted := 0
		for c := range callers {
			o := outcomes[k][c]
			if o.err != nil {
				t.Fatalf("key %d caller %d: %v", k, c, o.err)
			}
			if o.id != outcomes[k][0].id {
				t.Errorf("key %d: callers got different ids", k)
			}
			if o.inserted {
				inserted++
			}
		}
		if inserted != 1 {
			t.Errorf("key %d: %d callers report inserted, want 1", k, inserted)
		}
	}
	var requests, events int
	if err := db.Pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM requests), (SELECT count(*) FROM events)`).Scan(&requests, &events); err != nil {
		t.Fatal(err)
	}
	if requests != keys || events != keys {
		t.Errorf("requests %d, events %d; want %d each", requests, events, keys)
	}

	cancel()
	<-batcher.Done()
	if _, _, err := batcher.Insert(context.Background(), newRequest("wa_after_stop", "sha256:b")); err != store.ErrBatcherStopped {
		t.Errorf("Insert after Run ended = %v, want ErrBatcherStopped", err)
	}
}
