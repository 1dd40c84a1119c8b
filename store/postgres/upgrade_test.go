package postgres_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx", for goose
	"github.com/pressly/goose/v3"

	"github.com/countersign/countersign/migrations"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// A database filled by the schema before retention (00010) keeps its audit
// trail through the upgrade, which drops the events' foreign key: the
// events are all there, still append-only, and the request can be pruned
// while they stay.
func TestUpgradeToRetentionKeepsTheAuditTrail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, old := databaseMigratedUpTo(t, 10)
	const id = "11111111-1111-1111-1111-111111111111"
	settled := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, stmt := range []string{
		`INSERT INTO requests (id, key, basis_hash, run_id, step, tool, effect_strings, snapshot, payload_hash, requested_by, status, expires_at, created_at, updated_at)
		VALUES ('` + id + `', 'wa_upgrade', 'sha256:b', 'r', '1', 't', '{}', '\x7b7d', 'sha256:p', 'agent', 'cancelled', $1, $1, $1)`,
		`INSERT INTO events (request_id, at, actor, kind, data) VALUES ('` + id + `', $1, 'agent:agent', 'requested', '{"key":"wa_upgrade","round":1}')`,
		`INSERT INTO events (request_id, at, actor, kind, data) VALUES ('` + id + `', $1, 'agent:agent', 'cancelled', '{"round":1}')`,
	} {
		if _, err := old.ExecContext(ctx, stmt, settled); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}

	d, s := upgrade(t, url)
	events, err := s.EventsFor(ctx, id)
	if err != nil || len(events) != 2 || events[0].Kind != "requested" || events[0].Data["key"] != "wa_upgrade" || events[1].Kind != "cancelled" {
		t.Fatalf("events after the upgrade = %+v, %v", events, err)
	}
	for _, stmt := range []string{`DELETE FROM events`, `UPDATE events SET actor = 'x'`, `TRUNCATE events`} {
		if _, err := d.Pool.Exec(ctx, stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s after the upgrade = %v", stmt, err)
		}
	}

	// The events already there were chained by the upgrade.
	if r, err := s.VerifyAudit(ctx); err != nil || r.Bad != nil || r.Events != 2 || r.Requests != 1 {
		t.Errorf("VerifyAudit after the upgrade = %+v, %v", r, err)
	}

	if n, err := s.Prune(ctx, store.PruneParams{Before: time.Now()}); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v", n, err)
	}
	if n := countRows(t, d, `SELECT count(*) FROM events WHERE request_id = '`+id+`'`); n != 2 {
		t.Errorf("%d events after the prune, want 2", n)
	}
	tombs, err := s.Tombstones(ctx, []string{"wa_upgrade"})
	if err != nil || tombs["wa_upgrade"].Status != "cancelled" || !tombs["wa_upgrade"].SettledAt.Equal(settled) {
		t.Errorf("tombstone = %+v, %v", tombs, err)
	}
}

// A database filled by the schema of the audit chain (00012) moves into
// monthly partitions with the upgrade: every event lands in its month's
// partition, the chains still verify, the event reads keep their indexes,
// and an old month can then be dropped, leaving a checkpoint the rest
// verifies from.
func TestUpgradeToPartitionsCarriesTheChainsAcross(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, old := databaseMigratedUpTo(t, 12)
	const id = "22222222-2222-2222-2222-222222222222"
	// Two events of January 2020, chained as the trigger then would have,
	// and two of now through the trigger itself.
	jan := time.Date(2020, 1, 15, 0, 0, 0, 0, time.UTC)
	prev := ""
	for i, kind := range []string{"requested", "decided"} {
		e := store.AuditEvent{ID: int64(i + 1), RequestID: id, Seq: i + 1, At: jan.Add(time.Duration(i) * time.Hour),
			Actor: "agent:agent", Kind: kind, Data: "{}", PrevHash: prev}
		e.Hash = store.EventHash(e)
		prev = e.Hash
		for _, stmt := range []string{`ALTER TABLE events DISABLE TRIGGER events_chain`,
			`INSERT INTO events (id, request_id, at, actor, kind, data, seq, prev_hash, hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			`ALTER TABLE events ENABLE TRIGGER events_chain`} {
			var args []any
			if strings.HasPrefix(stmt, "INSERT") {
				args = []any{e.ID, e.RequestID, e.At, e.Actor, e.Kind, e.Data, e.Seq, e.PrevHash, e.Hash}
			}
			if _, err := old.ExecContext(ctx, stmt, args...); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
	}
	if _, err := old.ExecContext(ctx, `SELECT setval('events_id_seq', 2)`); err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{"claimed", "succeeded"} {
		if _, err := old.ExecContext(ctx, `INSERT INTO events (request_id, actor, kind) VALUES ($1, 'executor', $2)`, id, kind); err != nil {
			t.Fatal(err)
		}
	}

	d, s := upgrade(t, url)
	if n := countRows(t, d, `SELECT count(*) FROM pg_class WHERE relname = 'events' AND relkind = 'p'`); n != 1 {
		t.Fatal("events is not partitioned after the upgrade")
	}
	if n := countRows(t, d, `SELECT count(*) FROM events_202001`); n != 2 {
		t.Errorf("%d events in January 2020's partition, want 2", n)
	}
	if n := countRows(t, d, `SELECT count(*) FROM events_default`); n != 0 {
		t.Errorf("%d events left in the default partition", n)
	}
	if r, err := s.VerifyAudit(ctx); err != nil || r.Bad != nil || r.Events != 4 {
		t.Fatalf("VerifyAudit after the upgrade = %+v, %v", r, err)
	}
	// New events chain on after the old ones, in this month's partition.
	if err := s.AppendEvent(ctx, store.Event{RequestID: id, Actor: "U1", Kind: "noted"}); err != nil {
		t.Fatal(err)
	}
	if r, err := s.VerifyAudit(ctx); err != nil || r.Bad != nil || r.Events != 5 {
		t.Fatalf("VerifyAudit after a new event = %+v, %v", r, err)
	}
	for _, stmt := range []string{`DELETE FROM events`, `UPDATE events SET actor = 'x'`, `TRUNCATE events`, `TRUNCATE events_202001`} {
		if _, err := d.Pool.Exec(ctx, stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
			t.Errorf("%s after the upgrade = %v", stmt, err)
		}
	}

	// The reads of events use their indexes in every partition.
	for query, index := range map[string]string{
		`SELECT id FROM events WHERE request_id = '` + id + `' ORDER BY id`:                      "request_id_", // either index serves it
		`SELECT seq, hash FROM events WHERE request_id = '` + id + `' ORDER BY seq DESC LIMIT 1`: "request_id_seq_idx",
	} {
		tx, err := d.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, `EXPLAIN `+query)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		_ = tx.Rollback(ctx)
		if joined := strings.Join(plan, "\n"); !strings.Contains(joined, "events_202001_"+index) || strings.Contains(joined, "Seq Scan") {
			t.Errorf("%s:\n%s\nwant the %s index of each partition", query, joined, index)
		}
	}

	if n, err := s.DropAudit(ctx, time.Date(2021, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil || n != 1 {
		t.Fatalf("DropAudit = %d, %v", n, err)
	}
	if r, err := s.VerifyAudit(ctx); err != nil || r.Bad != nil || r.BadCheckpoint != nil || r.Events != 3 || r.Checkpoints != 1 || r.Resumed != 1 {
		t.Errorf("VerifyAudit after January 2020 was dropped = %+v, %v", r, err)
	}
}

// The live executions of a database filled before 00020 take their
// request's listing columns in the upgrade, and so does one inserted
// afterwards as the serve before it inserts them, while a rollout replaces
// it: both are listed by settled = false, an agent's and every agent's.
func TestUpgradeListsTheLiveExecutions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url, old := databaseMigratedUpTo(t, 19)
	// The statement that inserted an execution before 00020.
	const insertExecution = `INSERT INTO executions (request_id, decision_id, key, tool, snapshot, snapshot_hash, max_attempts, approved_at, state)
		SELECT r.id, d.id, r.key, r.tool, r.snapshot, r.payload_hash, 3, d.decided_at, $2 FROM requests r JOIN decisions d ON d.request_id = r.id
		WHERE r.key = $1`
	created := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, key := range []string{"wa_live", "wa_done", "wa_late"} {
		if _, err := old.ExecContext(ctx, `INSERT INTO requests (key, basis_hash, run_id, step, tool, effect_strings, snapshot,
			payload_hash, requested_by, status, expires_at, created_at, updated_at)
			VALUES ($1, 'sha256:b', 'r', '1', 't', '{}', '\x7b7d', 'sha256:p', 'agent', 'approved', $2, $2, $2)`,
			key, created.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := old.ExecContext(ctx, `INSERT INTO decisions (request_id, round, verdict, decided_by, via, payload_hash_seen)
		SELECT id, 1, 'approve', 'U1', 'slack', payload_hash FROM requests`); err != nil {
		t.Fatal(err)
	}
	for key, state := range map[string]string{"wa_live": "ready", "wa_done": "succeeded"} {
		if _, err := old.ExecContext(ctx, insertExecution, key, state); err != nil {
			t.Fatal(err)
		}
	}

	d, s := upgrade(t, url)
	if _, err := d.Pool.Exec(ctx, insertExecution, "wa_late", "needs_review"); err != nil {
		t.Fatalf("an execution inserted as before 00020: %v", err)
	}
	if n := countRows(t, d, `SELECT count(*) FROM executions e JOIN requests r ON r.id = e.request_id
		WHERE e.requested_by = r.requested_by AND e.request_created_at = r.created_at AND e.state <> 'succeeded'`); n != 2 {
		t.Errorf("%d of the 2 live executions carry their request's listing columns", n)
	}
	no := false
	for _, agent := range []string{"agent", ""} {
		reqs, err := s.ListRequests(ctx, store.ListRequestsParams{RequestedBy: agent, Settled: &no, Limit: 10})
		if err != nil || len(reqs) != 2 || reqs[0].Key != "wa_late" || reqs[1].Key != "wa_live" {
			t.Errorf("not settled, agent %q = %d requests, %v; want wa_late, wa_live", agent, len(reqs), err)
		}
	}
}

// databaseMigratedUpTo returns a new database migrated up to migration
// version (an older schema, to upgrade from) and a connection to it.
func databaseMigratedUpTo(t *testing.T, version int) (string, *sql.DB) {
	t.Helper()
	url := storetest.NewEmptyURL(t)
	old, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { old.Close() })
	provider, err := goose.NewProvider(goose.DialectPostgres, old, drivertest.MigrationsUpTo(t, migrations.Postgres, version),
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
	return url, old
}

// upgrade opens url's database with this build and migrates it, as a new
// serve does on start; the Ledger is closed when t ends.
func upgrade(t *testing.T, url string) (*postgres.Driver, *store.Ledger) {
	t.Helper()
	ctx := context.Background()
	d, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	s := store.NewLedger(d, store.Options{})
	t.Cleanup(s.Close)
	if n, err := s.Migrate(ctx, nil); err != nil || n < 1 {
		t.Fatalf("Migrate = %d, %v", n, err)
	}
	return d, s
}
