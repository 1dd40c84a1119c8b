package store_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/countersign/countersign/migrations"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/storetest"
)

func insertRequest(t *testing.T, db store.DBTX, key string) store.Request {
	t.Helper()
	req, inserted, err := store.InsertRequest(context.Background(), db, store.NewRequest{
		Key: key, BasisHash: "sha256:b", RunID: "r", Step: []byte(`1`), Tool: "t",
		Snapshot: []byte(`{"a":1}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: 3600e6,
	})
	if err != nil || !inserted {
		t.Fatalf("InsertRequest = %v, inserted %v", err, inserted)
	}
	return req
}

func TestEventsAreAppendOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.NewDB(t)
	req := insertRequest(t, db.Pool, "wa_appendonly")
	for _, sql := range []string{
		`UPDATE events SET actor = 'someone else'`,
		`DELETE FROM events`,
		`TRUNCATE events`,
		`TRUNCATE events CASCADE`,
	} {
		_, err := db.Pool.Exec(ctx, sql)
		if err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s: err = %v, want an append-only refusal", sql, err)
		}
	}
	events, err := store.EventsFor(ctx, db.Pool, req.ID)
	if err != nil || len(events) != 1 || events[0].Actor != "agent:agent" || events[0].Kind != "requested" {
		t.Fatalf("events after refused changes = %+v, %v", events, err)
	}
}

func TestInsertRequestConflictInsertsNothing(t *testing.T) {
	t.Parallel()
	tx := storetest.Tx(t)
	ctx := context.Background()
	insertRequest(t, tx, "wa_conflict")
	_, inserted, err := store.InsertRequest(ctx, tx, store.NewRequest{
		Key: "wa_conflict", BasisHash: "sha256:other", RunID: "r", Step: []byte(`1`), Tool: "t",
		Snapshot: []byte(`{"a":2}`), PayloadHash: "sha256:q", RequestedBy: "agent", TTL: 1,
	})
	if err != nil || inserted {
		t.Fatalf("second insert = %v, inserted %v", err, inserted)
	}
	var events, outbox int
	if err := tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM outbox)`).Scan(&events, &outbox); err != nil {
		t.Fatal(err)
	}
	if events != 1 || outbox != 1 {
		t.Errorf("events %d, outbox %d after a conflicting insert; want 1 and 1", events, outbox)
	}
}

func TestRequestByRef(t *testing.T) {
	t.Parallel()
	tx := storetest.Tx(t)
	ctx := context.Background()
	req := insertRequest(t, tx, "wa_byref")
	for _, ref := range []string{req.ID, strings.ToUpper(req.ID), req.Key} {
		got, err := store.RequestByRef(ctx, tx, ref)
		if err != nil || got.ID != req.ID {
			t.Errorf("RequestByRef(%s) = %s, %v", ref, got.ID, err)
		}
	}
	for _, ref := range []string{"wa_missing", "00000000-0000-0000-0000-000000000000", "not-a-uuid-but-36-characters-long-xx"} {
		if _, err := store.RequestByRef(ctx, tx, ref); err != store.ErrNotFound {
			t.Errorf("RequestByRef(%s) = %v, want ErrNotFound", ref, err)
		}
	}
}

func TestMigrateFreshDatabaseConcurrentlyThenIdempotent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := store.Open(ctx, storetest.NewEmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Replicas starting at once: the advisory lock lets one apply everything.
	var wg sync.WaitGroup
	applied := make([]int, 3)
	errs := make([]error, 3)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			applied[i], errs[i] = db.Migrate(ctx, nil)
		}()
	}
	wg.Wait()
	total := 0
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate %d: %v", i, err)
		}
		total += applied[i]
	}
	var files int
	entries, _ := migrations.FS.ReadDir(".")
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".sql") {
			files++
		}
	}
	if total != files {
		t.Errorf("migrations applied in all = %d, want each of the %d files once", total, files)
	}
	if n, err := db.Migrate(ctx, nil); err != nil || n != 0 {
		t.Fatalf("Migrate again = %d, %v; want 0", n, err)
	}
	insertRequest(t, db.Pool, "wa_after_migrate")
}
