package embedded_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/countersign/countersign/migrations"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/embedded"
)

// A file filled by the schema before retention (00010) keeps its audit trail
// through the upgrade, which rebuilds events without their foreign key: the
// events are all there, still append-only, and the request can be pruned
// while they stay.
func TestUpgradeToRetentionKeepsTheAuditTrail(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	old, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	provider, err := goose.NewProvider(goose.DialectSQLite3, old, drivertest.MigrationsUpTo(t, migrations.SQLite, 10),
		goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatal(err)
	}
	const id = "11111111-1111-1111-1111-111111111111"
	for _, stmt := range []string{
		`INSERT INTO requests (id, key, basis_hash, run_id, step, tool, snapshot, payload_hash, requested_by, status, expires_at, created_at, updated_at)
		VALUES ('` + id + `', 'wa_upgrade', 'sha256:b', 'r', '1', 't', X'7B7D', 'sha256:p', 'agent', 'cancelled', 1, 1, 2)`,
		`INSERT INTO events (request_id, at, actor, kind, data) VALUES ('` + id + `', 1, 'agent:agent', 'requested', '{"key":"wa_upgrade","round":1}')`,
		`INSERT INTO events (request_id, at, actor, kind, data) VALUES ('` + id + `', 2, 'agent:agent', 'cancelled', '{"round":1}')`,
	} {
		if _, err := old.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	old.Close()

	d, err := embedded.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s := store.NewLedger(d, store.Options{})
	defer s.Close()
	if n, err := s.Migrate(ctx, nil); err != nil || n < 1 {
		t.Fatalf("Migrate = %d, %v", n, err)
	}
	events, err := s.EventsFor(ctx, id)
	if err != nil || len(events) != 2 || events[0].Kind != "requested" || events[0].Data["key"] != "wa_upgrade" ||
		events[1].Kind != "cancelled" || !events[1].At.Equal(time.UnixMicro(2)) {
		t.Fatalf("events after the upgrade = %+v, %v", events, err)
	}
	raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, stmt := range []string{`DELETE FROM events`, `UPDATE events SET actor = 'x'`} {
		if _, err := raw.ExecContext(ctx, stmt); err == nil || !strings.Contains(err.Error(), "append-only") {
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
	if events, err := s.EventsFor(ctx, id); err != nil || len(events) != 2 {
		t.Errorf("events after the prune = %d, %v", len(events), err)
	}
	rs, err := s.InsertRequests(ctx, []store.NewRequest{{Key: "wa_upgrade", BasisHash: "sha256:b", RunID: "r", Step: []byte(`1`),
		Tool: "t", Snapshot: []byte(`{}`), PayloadHash: "sha256:p", RequestedBy: "agent", TTL: time.Hour}}, nil)
	if err != nil || rs[0].Inserted || rs[0].Pruned == nil || rs[0].Pruned.Status != "cancelled" {
		t.Errorf("replay after the prune = %+v, %v", rs, err)
	}
}
