package surface_test

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql's "pgx", for goose
	"github.com/pressly/goose/v3"

	"github.com/countersign/countersign/approvals"
	"github.com/countersign/countersign/migrations"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/drivertest"
	"github.com/countersign/countersign/store/embedded"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
	"github.com/countersign/countersign/surface"
	"github.com/countersign/countersign/surface/surfacetest"
)

// schemaBeforeSurfaces is the last migration of the Slack-only schema.
const schemaBeforeSurfaces = 21

const (
	unposted = "11111111-1111-1111-1111-111111111111" // a post waits
	posted   = "22222222-2222-2222-2222-222222222222" // its card is in C1; an update and a reminder wait
)

// An outbox written by the Slack-only schema (00021) is delivered after the
// upgrade: its rows are Slack's, the card it recorded (channel C1, ts 1.1)
// is Slack's under the ref C1/1.1 and still updated and replied to, the
// request still points at it, the channel's pause holds its lane until it
// ends, and the post still waiting is posted.
func TestUpgradeDrainsTheOutboxOfTheSlackOnlySchema(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		open func(t *testing.T) *store.Ledger
	}{{"postgres", oldPostgres}, {"sqlite", oldSQLite}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := tc.open(t)

			if got, err := s.RequestByID(ctx, posted); err != nil || got.CardSurface != "slack" || got.CardRef != "C1/1.1" {
				t.Fatalf("the request's card after the upgrade = %q %q, %v", got.CardSurface, got.CardRef, err)
			}
			if c, err := s.CardFor(ctx, posted, 1, "slack"); err != nil || c.Ref != "C1/1.1" || c.RenderedState != "pending" {
				t.Fatalf("the card after the upgrade = %+v, %v", c, err)
			}
			if d, err := s.LanePause(ctx, store.Lane{Surface: "slack", Destination: "C1"}); err != nil || d <= 0 {
				t.Fatalf("C1's pause after the upgrade = %v, %v; want it carried", d, err)
			}

			// Slack, as the outbox sees it: a surface named slack that
			// holds the card posted before the upgrade.
			slack := surfacetest.New("slack")
			slack.Holds("C1/1.1", posted, "wa_posted", 1, "pending")
			d := surface.New(surface.Config{Ledger: s, Tools: tools{}, Adapters: []surface.Adapter{slack}, PostInterval: -1})
			// The pause holds C1's lane back; the other lane's post goes.
			if _, err := d.RunOnce(ctx); err != nil {
				t.Fatal(err)
			}
			if c, _ := slack.Card(posted, 1); c.Updates != 0 || len(c.Replies) != 0 {
				t.Fatalf("C1's card during the carried pause = %+v; want it left alone", c)
			}
			if _, ok := slack.Card(unposted, 1); !ok {
				t.Fatal("the post to another lane waited for C1's pause")
			}
			deadline := time.Now().Add(60 * time.Second)
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for {
				if _, err := d.RunOnce(ctx); err != nil {
					t.Fatal(err)
				}
				if n, err := s.CountOutboxBacklog(ctx); err != nil || n == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the old outbox did not drain")
				}
				<-tick.C
			}

			if c, ok := slack.Card(unposted, 1); !ok || c.Destination != "room" {
				t.Errorf("the waiting post = %+v, %v", c, ok)
			}
			if c, ok := slack.Card(posted, 1); !ok || c.Updates != 1 || len(c.Replies) != 1 || c.Replies[0].Nudge != store.NudgeReminder {
				t.Errorf("the card posted before the upgrade = %+v, %v; want one update and the reminder", c, ok)
			}
			if c, err := s.CardFor(ctx, unposted, 1, "slack"); err != nil || c.Ref == "" {
				t.Errorf("the new card recorded = %+v, %v", c, err)
			}
			if slack.Cards() != 2 {
				t.Errorf("%d cards, want 2", slack.Cards())
			}
		})
	}
}

// tools is review's side of a View: one tool, no approvers.
type tools struct{}

func (tools) Tool(name string) (approvals.Tool, bool) { return approvals.Tool{Name: name}, true }

func (tools) Approvers(store.Request) []string { return nil }

// oldRows are the rows the Slack-only schema wrote, on either store: $1 is
// now and $2 an hour on, in the store's time.
var oldRows = []string{
	`INSERT INTO requests (id, key, basis_hash, run_id, step, tool, snapshot, payload_hash, requested_by, status, expires_at, created_at, updated_at)
	VALUES ('` + unposted + `', 'wa_unposted', 'sha256:b1', 'r', '1', 't', X'7B7D', 'sha256:p', 'agent', 'pending', $2, $1, $1)`,
	`INSERT INTO requests (id, key, basis_hash, run_id, step, tool, snapshot, payload_hash, requested_by, status, expires_at, created_at, updated_at, card_channel, card_ts)
	VALUES ('` + posted + `', 'wa_posted', 'sha256:b2', 'r', '2', 't', X'7B7D', 'sha256:p', 'agent', 'pending', $2, $1, $1, 'C1', '1.1')`,
	`INSERT INTO cards (request_id, round, channel, ts, rendered_state, settled, posted_at, rendered_at)
	VALUES ('` + posted + `', 1, 'C1', '1.1', 'pending', false, $1, $1)`,
	`INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at)
	VALUES ('post_card', '` + unposted + `', 1, '{}', $1, $1)`,
	`INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at)
	VALUES ('update_card', '` + posted + `', 1, '{"reason":"converge"}', $1, $1)`,
	`INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at)
	VALUES ('thread_reply', '` + posted + `', 1, '{"nudge":"reminder","mention":"U1"}', $1, $1)`,
}

// oldPostgres is a PostgreSQL database of the Slack-only schema with
// oldRows, upgraded by this build.
func oldPostgres(t *testing.T) *store.Ledger {
	ctx := context.Background()
	url := storetest.NewEmptyURL(t)
	old, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	migrateUpTo(t, old, goose.DialectPostgres, migrations.Postgres)
	now := time.Now()
	for _, stmt := range oldRows {
		stmt = pgRow(stmt)
		args := []any{now}
		if strings.Contains(stmt, "$2") {
			args = append(args, now.Add(time.Hour))
		}
		if _, err := old.ExecContext(ctx, stmt, args...); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	// A 429 met just before the upgrade still pauses the channel.
	if _, err := old.ExecContext(ctx, `INSERT INTO slack_pacing (channel, next_post_at, paused_until) VALUES ('C1', now(), now() + interval '8 s')`); err != nil {
		t.Fatal(err)
	}
	downAndBack(t, old, goose.DialectPostgres, migrations.Postgres)
	d, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	return upgraded(t, d)
}

// oldSQLite is an embedded store's file of the Slack-only schema with
// oldRows, upgraded by this build.
func oldSQLite(t *testing.T) *store.Ledger {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	old, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	migrateUpTo(t, old, goose.DialectSQLite3, migrations.SQLite)
	now := time.Now()
	for _, stmt := range oldRows {
		if _, err := old.ExecContext(ctx, stmt, now.UnixMicro(), now.Add(time.Hour).UnixMicro()); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	us := strconv.FormatInt(now.UnixMicro(), 10)
	if _, err := old.ExecContext(ctx, `INSERT INTO slack_pacing (channel, next_post_at, paused_until) VALUES ('C1', `+us+`, `+us+` + 8000000)`); err != nil {
		t.Fatal(err)
	}
	downAndBack(t, old, goose.DialectSQLite3, migrations.SQLite)
	old.Close()
	d, err := embedded.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	return upgraded(t, d)
}

func migrateUpTo(t *testing.T, db *sql.DB, dialect goose.Dialect, all fs.FS) {
	t.Helper()
	fsys := drivertest.MigrationsUpTo(t, all, schemaBeforeSurfaces)
	provider, err := goose.NewProvider(dialect, db, fsys, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Up(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// downAndBack migrates db up through the surfaces' migration and down
// again: the Slack-only schema's rows come back as they were.
func downAndBack(t *testing.T, db *sql.DB, dialect goose.Dialect, all fs.FS) {
	t.Helper()
	ctx := context.Background()
	provider, err := goose.NewProvider(dialect, db, all, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := provider.UpTo(ctx, schemaBeforeSurfaces+1); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.DownTo(ctx, schemaBeforeSurfaces); err != nil {
		t.Fatal(err)
	}
	for query, want := range map[string]string{
		`SELECT channel || '/' || ts FROM cards`:                                          "C1/1.1",
		`SELECT card_channel || '/' || card_ts FROM requests WHERE id = '` + posted + `'`: "C1/1.1",
		`SELECT channel FROM slack_pacing`:                                                "C1",
		`SELECT CAST(count(*) AS TEXT) FROM outbox WHERE state = 'pending'`:               "3",
	} {
		var got string
		if err := db.QueryRowContext(ctx, query).Scan(&got); err != nil || got != want {
			t.Errorf("%s after down = %q, %v; want %q", query, got, err, want)
		}
	}
}

// pgRow is an old row's statement as PostgreSQL takes it: a bytea
// snapshot, and the effect's strings it stores.
func pgRow(stmt string) string {
	stmt = strings.ReplaceAll(stmt, "step, tool, snapshot", "step, tool, effect_strings, snapshot")
	return strings.ReplaceAll(stmt, "'t', X'7B7D'", "'t', '{}', '\\x7b7d'::bytea")
}

// upgraded migrates d as a new serve does on start; the Ledger is closed
// when t ends.
func upgraded(t *testing.T, d store.Driver) *store.Ledger {
	t.Helper()
	s := store.NewLedger(d, store.Options{})
	t.Cleanup(s.Close)
	if n, err := s.Migrate(context.Background(), nil); err != nil || n < 1 {
		t.Fatalf("Migrate = %d, %v", n, err)
	}
	return s
}
