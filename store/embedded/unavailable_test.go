package embedded_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
)

func newRequest(key string) store.NewRequest {
	return store.NewRequest{Key: key, BasisHash: "sha256:b", RunID: "r", Step: []byte(`1`), Tool: "billing.credit",
		Snapshot: []byte(`{"a":1}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: time.Hour}
}

func openMigrated(t *testing.T, path string, busyTimeout time.Duration) *store.Ledger {
	t.Helper()
	d, err := embedded.OpenWithBusyTimeout(context.Background(), path, busyTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	s := store.NewLedger(d, store.Options{})
	if _, err := s.Migrate(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return s
}

// Another process holding the write lock past the busy timeout makes the
// store unavailable, not broken; once it lets go, the same write succeeds.
func TestWriteLockHeldPastBusyTimeoutIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s := openMigrated(t, path, 100*time.Millisecond)
	if _, _, err := s.InsertRequest(ctx, newRequest("wa_before")); err != nil {
		t.Fatal(err)
	}

	other, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	_, _, err = s.InsertRequest(ctx, newRequest("wa_locked"))
	if !store.IsUnavailable(err) || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("insert under another's write lock = %v, want unavailable", err)
	}
	// Reads go on beside the writer (WAL).
	if _, err := s.RequestByKey(ctx, "wa_before"); err != nil {
		t.Errorf("read under another's write lock = %v", err)
	}

	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if _, inserted, err := s.InsertRequest(ctx, newRequest("wa_locked")); err != nil || !inserted {
		t.Errorf("insert after the lock is released = inserted %v, %v", inserted, err)
	}
}

func TestClosedStoreIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openMigrated(t, filepath.Join(t.TempDir(), "ledger.db"), time.Second)
	if _, _, err := s.InsertRequest(ctx, newRequest("wa_stored")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RequestByKey(ctx, "wa_missing"); store.IsUnavailable(err) || !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing key on an open store = %v, want not found and not unavailable", err)
	}
	s.Close()
	calls := map[string]error{"Ping": s.Ping(ctx)}
	_, calls["RequestByKey"] = s.RequestByKey(ctx, "wa_stored")
	_, _, calls["ReplayRequest"] = s.ReplayRequest(ctx, "wa_stored")
	_, _, calls["InsertRequest"] = s.InsertRequest(ctx, newRequest("wa_after_close"))
	_, calls["EventsFor"] = s.EventsFor(ctx, "00000000-0000-0000-0000-000000000000")
	_, calls["RequestsByKeyPrefix"] = s.RequestsByKeyPrefix(ctx, "wa_", 10)
	_, calls["PendingRequests"] = s.PendingRequests(ctx, 10)
	for name, err := range calls {
		if !store.IsUnavailable(err) {
			t.Errorf("%s on a closed store = %v, want unavailable", name, err)
		}
	}
}
