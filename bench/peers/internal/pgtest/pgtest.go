// Package pgtest gives the peers' tests a scratch database on the local
// PostgreSQL (COUNTERSIGN_TEST_DATABASE_URL overrides the server, as in
// countersign's own tests).
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// AdminURL is the server tests create their databases on.
func AdminURL() string {
	if u := os.Getenv("COUNTERSIGN_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
}

// NewURL creates an empty database, dropped when the test ends, and returns
// its URL. A server that cannot be reached fails the test.
func NewURL(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Fatalf("connecting to PostgreSQL: %v", err)
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "peers_test_" + hex.EncodeToString(b)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		admin.Close(ctx)
		t.Fatalf("creating a database: %v", err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		admin.Close(context.Background())
	})
	u, err := url.Parse(AdminURL())
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}
