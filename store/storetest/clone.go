package storetest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
)

// CloneURL copies the database at rawURL into a new database, dropped when
// the test ends, and returns its URL: a restore of a backup taken at this
// moment. Nothing may be connected to the database at rawURL meanwhile
// (PostgreSQL copies a template only then).
func CloneURL(t testing.TB, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("cloning: %v", err)
	}
	src := strings.TrimPrefix(u.Path, "/")
	name := "cs_test_" + randomHex(6)
	ctx := context.Background()
	admin := connectAdmin(t)
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY", name, src)); err != nil {
		t.Fatalf("cloning %s: %v", src, err)
	}
	t.Cleanup(func() { dropDatabase(t, name) })
	return withDatabase(AdminURL(), name)
}
