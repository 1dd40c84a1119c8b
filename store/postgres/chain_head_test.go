package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// headOf returns the chain head kept on a request's row and the seq and
// hash of its last event.
func headOf(t *testing.T, d *postgres.Driver, id string) (rowSeq *int, rowHash *string, lastSeq int, lastHash string) {
	t.Helper()
	ctx := context.Background()
	if err := d.Pool.QueryRow(ctx, `SELECT chain_seq, chain_hash FROM requests WHERE id = $1`, id).Scan(&rowSeq, &rowHash); err != nil {
		t.Fatal(err)
	}
	if err := d.Pool.QueryRow(ctx, `SELECT seq, hash FROM events WHERE request_id = $1 ORDER BY seq DESC LIMIT 1`, id).Scan(&lastSeq, &lastHash); err != nil {
		t.Fatal(err)
	}
	return rowSeq, rowHash, lastSeq, lastHash
}

// A database whose chains were written before the head moved onto the
// request row (00027) keeps them: an older request's next event continues
// its chain from its last event, and from then on its row holds the head;
// the events of a request whose row is gone chain on as before; everything
// verifies.
func TestUpgradeToChainHeadContinuesTheChains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, old := databaseMigratedUpTo(t, 24)
	const kept, gone = "33333333-3333-3333-3333-333333333333", "44444444-4444-4444-4444-444444444444"
	for _, stmt := range []string{
		`INSERT INTO requests (id, key, basis_hash, run_id, step, tool, effect_strings, snapshot, payload_hash, requested_by, status, expires_at)
		VALUES ('` + kept + `', 'wa_head', 'sha256:b', 'r', '1', 't', '{}', '\x7b7d', 'sha256:p', 'agent', 'pending', now() + interval '1 hour')`,
		`INSERT INTO events (request_id, actor, kind) VALUES ('` + kept + `', 'agent:agent', 'requested')`,
		`INSERT INTO events (request_id, actor, kind) VALUES ('` + kept + `', 'U1', 'approved')`,
		`INSERT INTO events (request_id, actor, kind) VALUES ('` + gone + `', 'agent:agent', 'requested')`,
	} {
		if _, err := old.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	d, s := upgrade(t, url)
	if rowSeq, rowHash, _, _ := headOf(t, d, kept); rowSeq != nil || rowHash != nil {
		t.Fatalf("a row stored before the upgrade has head %v, %v; want none (NULL)", rowSeq, rowHash)
	}
	for _, id := range []string{kept, gone, kept} {
		if err := s.AppendEvent(ctx, store.Event{RequestID: id, Actor: "executor", Kind: "claimed"}); err != nil {
			t.Fatal(err)
		}
	}
	rowSeq, rowHash, lastSeq, lastHash := headOf(t, d, kept)
	if lastSeq != 4 || rowSeq == nil || *rowSeq != 4 || rowHash == nil || *rowHash != lastHash {
		t.Errorf("after the upgrade: head on the row %v, %v; last event %d, %s", rowSeq, rowHash, lastSeq, lastHash)
	}
	if n := countRows(t, d, `SELECT max(seq) FROM events WHERE request_id = '`+gone+`'`); n != 2 {
		t.Errorf("the request without a row has its last event at seq %d, want 2", n)
	}
	if r, err := s.VerifyAudit(ctx); err != nil || r.Bad != nil || r.Events != 6 || r.Requests != 2 {
		t.Errorf("VerifyAudit after the upgrade = %+v, %v", r, err)
	}
}

// A new request's events keep its chain head on its row, each one updating
// it in place: the update is HOT (no index entry written) even on a page
// intake filled, and it takes no advisory lock.
func TestChainHeadIsUpdatedInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)
	b := drivertest.PostgresAt(t, url)
	for i := range 200 {
		insertRequest(t, b.Store, fmt.Sprintf("wa_head_%03d", i))
	}
	d, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var id string
	if err := d.Pool.QueryRow(ctx, `SELECT id::text FROM requests WHERE ctid < '(1,0)' ORDER BY ctid LIMIT 1`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	if rowSeq, rowHash, lastSeq, lastHash := headOf(t, d, id); rowSeq == nil || *rowSeq != lastSeq || lastSeq < 1 || *rowHash != lastHash {
		t.Fatalf("after intake: head on the row %v, %v; last event %d, %s", rowSeq, rowHash, lastSeq, lastHash)
	}

	var upd, hot, advisory int
	err = pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO events (request_id, actor, kind) VALUES ($1, 'U1', 'noted')`, id); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`).Scan(&advisory); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = 'requests'`).Scan(&upd, &hot)
	})
	if err != nil {
		t.Fatal(err)
	}
	if upd != 1 || hot != 1 {
		t.Errorf("an event updated its request's row %d times, %d of them HOT; want 1 and 1", upd, hot)
	}
	if advisory != 0 {
		t.Errorf("an event took %d advisory locks, want none", advisory)
	}
	if rowSeq, rowHash, lastSeq, lastHash := headOf(t, d, id); *rowSeq != lastSeq || *rowHash != lastHash {
		t.Errorf("after an event: head on the row %d, %s; last event %d, %s", *rowSeq, *rowHash, lastSeq, lastHash)
	}
}

// Events written to one request at once, from many connections, take the
// row's lock one at a time: one chain, no number given twice.
func TestChainHeadTakesConcurrentEventsInTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)
	b := drivertest.PostgresAt(t, url)
	req := insertRequest(t, b.Store, "wa_head_race")
	const writers, each = 8, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				errs <- b.Store.AppendEvent(ctx, store.Event{RequestID: req.ID, Actor: fmt.Sprintf("U%d", w), Kind: store.EventKind(fmt.Sprintf("noted_%d", i))})
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	d, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	n := countRows(t, d, `SELECT count(*) FROM events WHERE request_id = '`+req.ID+`'`)
	if distinct := countRows(t, d, `SELECT count(DISTINCT seq) FROM events WHERE request_id = '`+req.ID+`'`); distinct != n || n < writers*each+1 {
		t.Errorf("%d events, %d distinct seqs; want %d or more, all distinct", n, distinct, writers*each+1)
	}
	if rowSeq, _, lastSeq, _ := headOf(t, d, req.ID); *rowSeq != n || lastSeq != n {
		t.Errorf("head on the row %d, last event %d; want %d", *rowSeq, lastSeq, n)
	}
	if r, err := b.Store.VerifyAudit(ctx); err != nil || r.Bad != nil || r.Events != n {
		t.Errorf("VerifyAudit = %+v, %v", r, err)
	}
}
