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
// leaves an existing one alone.
func TestEnsureDatabaseCreatesTheNamedDatabaseOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	name := fmt.Sprintf("cs_test_ensure_%x", time.Now().UnixNano())
	admin, err := pgx.Connect(ctx, storetest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })

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
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil || n != 1 {
			t.Fatalf("run %d: %d databases named %s, %v", i+1, n, name, err)
		}
	}
}
