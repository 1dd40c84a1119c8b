package main

import (
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store/storetest"
)

// make run creates the database DATABASE_URL names, whatever its name, and
// leaves an existing one alone. The test leaves no database behind: the
// subtest's cleanup drops it, which the outer test then checks.
func TestEnsureDatabaseCreatesTheNamedDatabaseOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := fmt.Sprintf("cs_test_ensure_%x", time.Now().UnixNano())
	admin, err := pgx.Connect(ctx, storetest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	count := func(t *testing.T) int {
		t.Helper()
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("create", func(t *testing.T) {
		// Cleanups run after the subtest, while admin is still open.
		t.Cleanup(func() {
			if _, err := admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
				t.Errorf("dropping %s: %v", name, err)
			}
		})
		u, err := url.Parse(storetest.AdminURL())
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + name
		for i, want := range []string{"creating database " + name, ""} {
			out, err := exec.Command("../../scripts/ensure-database", u.String()).CombinedOutput()
			if err != nil || strings.TrimSpace(string(out)) != want {
				t.Fatalf("run %d: %v, printed %q, want %q", i+1, err, out, want)
			}
			if n := count(t); n != 1 {
				t.Fatalf("run %d: %d databases named %s", i+1, n, name)
			}
		}
	})
	if n := count(t); n != 0 {
		t.Errorf("the test left the database %s behind", name)
	}
}
