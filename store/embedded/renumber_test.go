package embedded_test

import (
	"context"
	"database/sql"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/countersign/countersign/migrations"
	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
)

// A file migrated when SQLite numbered its migrations apart from
// PostgreSQL's (testdata/numbered-apart, the files as they were) upgrades to
// the shared numbers: its version 2 is the shared 00005, so nothing is
// applied twice, and the ledger works on it.
func TestFileMigratedBeforeSharedNumbersUpgrades(t *testing.T) {
	for _, tc := range []struct {
		name       string
		oldVersion int64
		wantNew    int
	}{
		{"at version 2", 2, 0},
		{"at version 1", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "ledger.db")
			old, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			provider, err := goose.NewProvider(goose.DialectSQLite3, old, os.DirFS("testdata/numbered-apart"),
				goose.WithDisableGlobalRegistry(true))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := provider.UpTo(ctx, tc.oldVersion); err != nil {
				t.Fatal(err)
			}
			old.Close()

			d, err := embedded.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			l := store.NewLedger(d, store.Options{})
			// Migrations numbered after the shared 00005 apply on top.
			if n, err := l.Migrate(ctx, nil); err != nil || n != tc.wantNew+migrationsAfter(t, 5) {
				t.Fatalf("Migrate = %d, %v; want %d applied", n, err, tc.wantNew+migrationsAfter(t, 5))
			}
			if n, err := l.Migrate(ctx, nil); err != nil || n != 0 {
				t.Fatalf("Migrate again = %d, %v; want 0", n, err)
			}
			req, _, err := l.InsertRequest(ctx, newRequest("wa_upgraded"))
			if err != nil {
				t.Fatal(err)
			}
			if _, _, ok, err := l.Decide(ctx, store.DecideParams{RequestID: req.ID, Round: 1, PayloadHash: req.PayloadHash,
				Verdict: store.VerdictReject, DecidedBy: "U1", Via: "slack"}); err != nil || !ok {
				t.Fatalf("Decide = %v, %v", ok, err)
			}
			if reqs, err := l.RecentlyDecided(ctx, 10); err != nil || len(reqs) != 1 {
				t.Fatalf("RecentlyDecided = %d, %v; want the decided request", len(reqs), err)
			}
		})
	}
}

// migrationsAfter counts the SQLite migrations numbered above version.
func migrationsAfter(t *testing.T, version int) int {
	t.Helper()
	files, err := fs.Glob(migrations.SQLite, "*.sql")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		num, _, _ := strings.Cut(f, "_")
		if v, err := strconv.Atoi(num); err == nil && v > version {
			n++
		}
	}
	return n
}
