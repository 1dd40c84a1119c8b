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
	url := storetest.NewEmptyURL(t)
	old, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	provider, err := goose.NewProvider(goose.DialectPostgres, old, drivertest.MigrationsUpTo(t, migrations.Postgres, 10),
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatal(err)
	}
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

	d, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	s := store.NewLedger(d, store.Options{})
	defer s.Close()
	if n, err := s.Migrate(ctx, nil); err != nil || n < 1 {
		t.Fatalf("Migrate = %d, %v", n, err)
	}
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
