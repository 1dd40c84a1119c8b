package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store/storetest"
)

// make clean-test-databases drops only what is stale: a database nobody is
// connected to, created longer ago than STALE_AFTER. One in use, or one
// just created (another run's, between its creation and its first
// connection), stays. DATABASES_LIKE keeps the script to this test's own.
func TestDropTestDatabasesDropsOnlyTheStale(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	prefix := fmt.Sprintf("cs_test_clean_%x_", time.Now().UnixNano())
	admin, err := pgx.Connect(ctx, storetest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	idle, busy := prefix+"idle", prefix+"busy"
	for _, name := range []string{idle, busy} {
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)") })
	}
	u, err := url.Parse(storetest.AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + busy
	held, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close(ctx)
	exists := func(name string) bool {
		t.Helper()
		var n int
		if err := admin.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	drop := func(staleAfter string) string {
		t.Helper()
		cmd := exec.Command("../../scripts/drop-test-databases")
		cmd.Env = append(os.Environ(), "COUNTERSIGN_TEST_DATABASE_URL="+storetest.AdminURL(), "DATABASES_LIKE="+prefix+"%")
		if staleAfter != "" {
			cmd.Env = append(cmd.Env, "STALE_AFTER="+staleAfter)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("drop-test-databases: %v\n%s", err, out)
		}
		return string(out)
	}

	// By default (an hour), both are too young.
	if out := drop(""); out != "" || !exists(idle) || !exists(busy) {
		t.Fatalf("fresh databases: printed %q; idle kept %v, busy kept %v", out, exists(idle), exists(busy))
	}
	// Old enough: the idle one goes, the one with a connection stays.
	if out := drop("0 seconds"); out != "dropped "+idle+"\n" || exists(idle) || !exists(busy) {
		t.Fatalf("printed %q; idle kept %v, busy kept %v", out, exists(idle), exists(busy))
	}
}
