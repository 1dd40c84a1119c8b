package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
)

// A replay that reaches the insert while a prune of its key holds the row
// waits for the prune; when the prune commits, the insert's statement no
// longer conflicts with the row, and only the trigger that looks for the
// tombstone stops it. The ledger then asks again and answers with the
// tombstone: never a second request, never an error. The prune here is one
// statement that holds its locks for a second, so the replay surely waits.
func TestAReplayWaitingOnAPruneFindsItsTombstone(t *testing.T) {
	for _, d := range []drivertest.Driver{drivertest.Postgres, drivertest.PostgresComposed} {
		t.Run(d.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := d.Open(t, true)
			const key = "wa_pruned_meanwhile"
			req := insertRequest(t, b.Store, key)
			if _, ok, err := b.CancelRequest(ctx, req.ID, "agent:agent", nil); err != nil || !ok {
				t.Fatalf("cancel: %v, %v", ok, err)
			}

			pruned := make(chan error, 1)
			go func() {
				pruned <- b.Exec(fmt.Sprintf(`DO $$ BEGIN
					INSERT INTO tombstones (key, basis_hash, agent, status, settled_at)
						VALUES ('%[1]s', 'sha256:b', 'agent', 'cancelled', now());
					DELETE FROM outbox WHERE request_id = '%[2]s';
					DELETE FROM decisions WHERE request_id = '%[2]s';
					DELETE FROM requests WHERE id = '%[2]s';
					PERFORM pg_sleep(1);
				END $$`, key, req.ID))
			}()
			// The prune holds the row once its statement sleeps.
			deadline := time.Now().Add(10 * time.Second)
			for {
				n, err := b.QueryInt(`SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND datname = current_database()`)
				if err != nil {
					t.Fatal(err)
				}
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the prune never held the row")
				}
				time.Sleep(5 * time.Millisecond)
			}

			start := time.Now()
			results, err := b.InsertRequests(ctx, []store.NewRequest{{
				Key: key, BasisHash: "sha256:b", RunID: "r", Step: []byte(`1`), Tool: "t",
				Snapshot: []byte(`{"a":1}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: time.Hour,
			}}, nil)
			waited := time.Since(start)
			if err := <-pruned; err != nil {
				t.Fatalf("prune: %v", err)
			}
			if err != nil {
				t.Fatalf("replay during the prune: %v", err)
			}
			if waited < 500*time.Millisecond {
				t.Errorf("the replay waited %v: it did not meet the prune", waited)
			}
			if r := results[0]; r.Inserted || r.Pruned == nil || r.Pruned.Status != "cancelled" {
				t.Errorf("replay = %+v, want the key's tombstone", r)
			}
			if n := b.Count(t, `SELECT count(*) FROM requests WHERE key = '`+key+`'`); n != 0 {
				t.Errorf("%d requests hold the pruned key", n)
			}
		})
	}
}
