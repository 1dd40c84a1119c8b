package postgres_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// headOf returns a request's chain head (found false when it has none)
// and the seq and hash of its last event.
func headOf(t *testing.T, d *postgres.Driver, id string) (found bool, headSeq int, headHash string, lastSeq int, lastHash string) {
	t.Helper()
	ctx := context.Background()
	err := d.Pool.QueryRow(ctx, `SELECT seq, hash FROM chain_heads WHERE request_id = $1`, id).Scan(&headSeq, &headHash)
	switch {
	case err == pgx.ErrNoRows:
	case err != nil:
		t.Fatal(err)
	default:
		found = true
	}
	if err := d.Pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0), coalesce((SELECT hash FROM events WHERE request_id = $1 ORDER BY seq DESC LIMIT 1), '')
		FROM events WHERE request_id = $1`, id).Scan(&lastSeq, &lastHash); err != nil {
		t.Fatal(err)
	}
	return found, headSeq, headHash, lastSeq, lastHash
}

// storeRow inserts a request's row as the schema's owner, without intake's
// first event.
func storeRow(t *testing.T, exec func(string) error, id, key string) {
	t.Helper()
	stmt := `INSERT INTO requests (id, key, basis_hash, run_id, step, tool, effect_strings, snapshot, payload_hash, requested_by, status, expires_at)
		VALUES ('` + id + `', '` + key + `', 'sha256:b', 'r', '1', 't', '{}', '\x7b7d', 'sha256:p', 'agent', 'pending', now() + interval '1 hour')`
	if err := exec(stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// A database whose chains were written before the heads had a table
// (00027) keeps them: the migration fills each stored request's head from
// its last event, and its next event continues the chain; the events of a
// request whose row is gone chain on as before and leave no head; a
// request stored without events starts at 1; everything verifies. A role
// that inserts events (serve's) may write the heads at once.
func TestUpgradeToChainHeadsContinuesTheChains(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, old := databaseMigratedUpTo(t, 26)
	const kept, gone, quiet = "33333333-3333-3333-3333-333333333333", "44444444-4444-4444-4444-444444444444", "55555555-5555-5555-5555-555555555555"
	exec := func(stmt string) error { _, err := old.ExecContext(ctx, stmt); return err }
	writer, reader := storetest.NewRoleName(t, url), storetest.NewRoleName(t, url)
	for _, stmt := range []string{
		`CREATE ROLE ` + writer, `CREATE ROLE ` + reader,
		`GRANT SELECT, INSERT ON events TO ` + writer, `GRANT SELECT ON events TO ` + reader,
	} {
		if err := exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	storeRow(t, exec, kept, "wa_head")
	storeRow(t, exec, quiet, "wa_quiet")
	for _, stmt := range []string{
		`INSERT INTO events (request_id, actor, kind) VALUES ('` + kept + `', 'agent:agent', 'requested')`,
		`INSERT INTO events (request_id, actor, kind) VALUES ('` + kept + `', 'U1', 'approved')`,
		`INSERT INTO events (request_id, actor, kind) VALUES ('` + gone + `', 'agent:agent', 'requested')`,
	} {
		if err := exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	d, s := upgrade(t, url)
	if found, seq, hash, lastSeq, lastHash := headOf(t, d, kept); !found || seq != 2 || lastSeq != 2 || hash != lastHash {
		t.Fatalf("after the upgrade the stored request's head is %v %d %s; its last event %d %s", found, seq, hash, lastSeq, lastHash)
	}
	if found, _, _, _, _ := headOf(t, d, gone); found {
		t.Fatal("the migration gave a head to a request without a row")
	}
	for role, want := range map[string]int{writer: 4, reader: 0} {
		if n := countRows(t, d, `SELECT count(*) FROM unnest(ARRAY['SELECT', 'INSERT', 'UPDATE', 'DELETE']) p
			WHERE has_table_privilege('`+role+`', 'chain_heads', p)`); n != want {
			t.Errorf("role %s holds %d of SELECT, INSERT, UPDATE, DELETE on chain_heads after the upgrade, want %d", role, n, want)
		}
	}
	for _, id := range []string{kept, gone, kept, quiet} {
		if err := s.AppendEvent(ctx, store.Event{RequestID: id, Actor: "executor", Kind: "claimed"}); err != nil {
			t.Fatal(err)
		}
	}
	if found, seq, hash, lastSeq, lastHash := headOf(t, d, kept); !found || lastSeq != 4 || seq != 4 || hash != lastHash {
		t.Errorf("after two events: head %v %d %s; last event %d %s", found, seq, hash, lastSeq, lastHash)
	}
	if found, _, _, lastSeq, _ := headOf(t, d, gone); found || lastSeq != 2 {
		t.Errorf("the request without a row: head kept %v, last event at seq %d, want none and 2", found, lastSeq)
	}
	if found, seq, hash, lastSeq, lastHash := headOf(t, d, quiet); !found || seq != 1 || lastSeq != 1 || hash != lastHash {
		t.Errorf("a request stored without events: head %v %d %s; last event %d %s", found, seq, hash, lastSeq, lastHash)
	}
	if n := countRows(t, d, `SELECT count(*) FROM events WHERE request_id = '`+kept+`' AND prev_hash = (SELECT hash FROM events WHERE request_id = '`+kept+`' AND seq = 2)`); n != 1 {
		t.Errorf("%d events chained to the last one written before the upgrade, want 1", n)
	}
	if r, err := s.VerifyAudit(ctx); err != nil || r.Bad != nil || r.Events != 7 || r.Requests != 3 {
		t.Errorf("VerifyAudit after the upgrade = %+v, %v", r, err)
	}
}

// A request's events move its head in place: one update of chain_heads,
// HOT (no index entry written), none of requests, and no advisory lock.
func TestChainHeadIsUpdatedInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)
	b := drivertest.PostgresAt(t, url)
	for i := range 50 {
		insertRequest(t, b.Store, fmt.Sprintf("wa_head_%03d", i))
	}
	req := insertRequest(t, b.Store, "wa_head_last")
	d, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if found, seq, hash, lastSeq, lastHash := headOf(t, d, req.ID); !found || seq != lastSeq || lastSeq < 1 || hash != lastHash {
		t.Fatalf("after intake: head %v %d %s; last event %d %s", found, seq, hash, lastSeq, lastHash)
	}

	var headUpd, headHot, reqUpd, advisory int
	err = pgx.BeginFunc(ctx, d.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO events (request_id, actor, kind) VALUES ($1, 'U1', 'noted')`, req.ID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()`).Scan(&advisory); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT coalesce(sum(n_tup_upd), 0) FROM pg_stat_xact_user_tables WHERE relname = 'requests'`).Scan(&reqUpd); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = 'chain_heads'`).Scan(&headUpd, &headHot)
	})
	if err != nil {
		t.Fatal(err)
	}
	if headUpd != 1 || headHot != 1 || reqUpd != 0 {
		t.Errorf("an event updated chain_heads %d times (%d HOT) and requests %d times; want 1, 1 HOT and 0", headUpd, headHot, reqUpd)
	}
	if advisory != 0 {
		t.Errorf("an event took %d advisory locks, want none", advisory)
	}
	if found, seq, hash, lastSeq, lastHash := headOf(t, d, req.ID); !found || seq != lastSeq || hash != lastHash {
		t.Errorf("after an event: head %v %d %s; last event %d %s", found, seq, hash, lastSeq, lastHash)
	}
}

// Events written to one request at once, from 8 connections, take the
// head's lock one at a time: one chain, no number given twice. The request
// is stored without events, so the writers also race to insert its head.
func TestChainHeadTakesConcurrentEventsInTurn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)
	b := drivertest.PostgresAt(t, url)
	const id = "66666666-6666-6666-6666-666666666666"
	storeRow(t, func(s string) error { return b.Exec(s) }, id, "wa_head_race")
	const writers, each = 8, 15
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range each {
				errs <- b.Store.AppendEvent(ctx, store.Event{RequestID: id, Actor: fmt.Sprintf("U%d", w), Kind: store.EventKind(fmt.Sprintf("noted_%d", i))})
			}
		}()
	}
	close(start)
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
	n := countRows(t, d, `SELECT count(*) FROM events WHERE request_id = '`+id+`'`)
	if distinct := countRows(t, d, `SELECT count(DISTINCT seq) FROM events WHERE request_id = '`+id+`'`); distinct != n || n != writers*each {
		t.Errorf("%d events, %d distinct seqs; want %d, all distinct", n, distinct, writers*each)
	}
	if found, seq, hash, lastSeq, lastHash := headOf(t, d, id); !found || seq != n || lastSeq != n || hash != lastHash {
		t.Errorf("head %v %d %s, last event %d %s; want %d", found, seq, hash, lastSeq, lastHash, n)
	}
	if r, err := b.Store.VerifyAudit(ctx); err != nil || r.Bad != nil || r.Events != n {
		t.Errorf("VerifyAudit = %+v, %v", r, err)
	}
}

// The retention sweep deletes a request's head with its row; an event
// written for it afterwards continues its chain from its last event (the
// way before 00027) and leaves no head behind.
func TestChainHeadLeavesWithItsPrunedRequest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.NewURL(t)
	b := drivertest.PostgresAt(t, url)
	req := insertRequest(t, b.Store, "wa_head_pruned")
	keep := insertRequest(t, b.Store, "wa_head_kept")
	if _, ok, err := b.Store.CancelRequest(ctx, req.ID, "agent:agent", nil); err != nil || !ok {
		t.Fatalf("cancel: %v, %v", ok, err)
	}
	d, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, _, _, before, _ := headOf(t, d, req.ID)
	if n, err := b.Store.Prune(ctx, store.PruneParams{Before: time.Now().Add(time.Hour)}); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want 1", n, err)
	}
	if found, _, _, _, _ := headOf(t, d, req.ID); found {
		t.Error("the pruned request's head is still there")
	}
	if found, _, _, _, _ := headOf(t, d, keep.ID); !found {
		t.Error("the pending request lost its head")
	}
	if err := b.Store.AppendEvent(ctx, store.Event{RequestID: req.ID, Actor: "system", Kind: "noted"}); err != nil {
		t.Fatal(err)
	}
	if found, _, _, last, _ := headOf(t, d, req.ID); found || last != before+1 {
		t.Errorf("an event after the prune: head kept %v, at seq %d; want none and %d", found, last, before+1)
	}
	if r, err := b.Store.VerifyAudit(ctx); err != nil || r.Bad != nil || r.Requests != 2 {
		t.Errorf("VerifyAudit = %+v, %v", r, err)
	}
}
