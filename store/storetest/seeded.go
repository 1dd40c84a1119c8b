package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store/postgres"
)

// KeepVariable names the environment variable that names a database the
// benchmarks keep seeded between runs: seeded the first time, reused while
// the schema and the seed are the same, seeded again when either changed.
// Seeding 10,000,000 requests takes minutes; with it each benchmark after
// the first starts at once. Drop the database when done with it.
const KeepVariable = "COUNTERSIGN_BENCH_DATABASE"

// keptComment marks a database SeededURL seeded, with what it holds.
const keptComment = "countersign seed "

var keptName = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// SeededURL returns the URL of a migrated database seeded with s by
// SeedLedger. Without KeepVariable it is a fresh database, dropped when tb
// ends; with it, the database it names, kept. A benchmark that writes
// takes SeededCopyURL instead, so the kept one stays as seeded.
func SeededURL(tb testing.TB, s Seed) string {
	tb.Helper()
	name := os.Getenv(KeepVariable)
	if name == "" {
		url := NewURL(tb)
		seed(tb, url, s)
		return url
	}
	return keptURL(tb, name, s)
}

// SeededCopyURL returns the URL of a database seeded with s, dropped when
// tb ends: with KeepVariable, a file copy of the kept database (about a
// minute for 10,000,000 requests, far less than seeding again).
func SeededCopyURL(tb testing.TB, s Seed) string {
	tb.Helper()
	name := os.Getenv(KeepVariable)
	if name == "" {
		return SeededURL(tb, s)
	}
	keptURL(tb, name, s)
	ctx := context.Background()
	copyName := name + "_copy_" + randomHex(4)
	admin := connectAdmin(tb)
	defer admin.Close(ctx)
	t0 := time.Now()
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY", copyName, name)); err != nil {
		tb.Fatalf("copying %s (no session may be connected to it): %v", name, err)
	}
	tb.Cleanup(func() { dropDatabase(tb, copyName) })
	tb.Logf("copied %s in %s", name, time.Since(t0).Round(100*time.Millisecond))
	return withDatabase(AdminURL(), copyName)
}

// keptURL returns the URL of the kept database name holding s, seeding it
// first unless it already does. Benchmarks in other packages may ask at
// once: an advisory lock on the name lets one seed while the others wait.
func keptURL(tb testing.TB, name string, s Seed) string {
	tb.Helper()
	if !keptName.MatchString(name) {
		tb.Fatalf("%s=%q is not a plain database name", KeepVariable, name)
	}
	ctx := context.Background()
	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(ctx) })
	if templateErr != nil {
		tb.Fatalf("preparing template database: %v", templateErr)
	}
	want := keptComment + keptVersion(s)
	admin := connectAdmin(tb)
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(7260002, hashtext($1))", name); err != nil {
		tb.Fatal(err)
	}
	defer admin.Exec(ctx, "SELECT pg_advisory_unlock(7260002, hashtext($1))", name)
	var comment *string
	err := admin.QueryRow(ctx, `SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $1`, name).Scan(&comment)
	switch {
	case err == nil && comment != nil && *comment == want:
		tb.Logf("reusing %s (%s)", name, want)
		return withDatabase(AdminURL(), name)
	case err == nil && (comment == nil || !strings.HasPrefix(*comment, keptComment)):
		tb.Fatalf("%s=%s names a database the benchmarks did not seed; name another", KeepVariable, name)
	case err != nil && !errors.Is(err, pgx.ErrNoRows):
		tb.Fatal(err)
	}
	// Seeded under another name and renamed when complete, so a seeding cut
	// short is never taken for a seeded database.
	building := name + "_seeding"
	for _, sql := range []string{
		"DROP DATABASE IF EXISTS " + building + " WITH (FORCE)",
		fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY", building, templateName),
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			tb.Fatal(err)
		}
	}
	seed(tb, withDatabase(AdminURL(), building), s)
	for _, sql := range []string{
		"DROP DATABASE IF EXISTS " + name + " WITH (FORCE)",
		"ALTER DATABASE " + building + " RENAME TO " + name,
		fmt.Sprintf("COMMENT ON DATABASE %s IS '%s'", name, want),
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Logf("kept %s (%s)", name, want)
	return withDatabase(AdminURL(), name)
}

// seed opens url, seeds it with s and closes it.
func seed(tb testing.TB, url string, s Seed) {
	tb.Helper()
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		tb.Fatal(err)
	}
	defer db.Close()
	SeedLedger(tb, db, s)
}

// keptVersion names what a kept database holds: the schema (the template's
// migrations), the seed's statements and its options.
func keptVersion(s Seed) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%+v", templateName, s)
	for _, sql := range ledgerStatements(s) {
		fmt.Fprintf(h, "\x00%s", sql)
	}
	return fmt.Sprintf("%d live=%t trail=%t %s", s.Requests, s.Live, s.Trail, hex.EncodeToString(h.Sum(nil))[:12])
}
