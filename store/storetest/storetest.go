// Package storetest gives tests real PostgreSQL databases: a fresh database
// cloned from a migrated template for tests that commit, and a transaction
// rolled back at the end for tests that do not.
//
// The server comes from COUNTERSIGN_TEST_DATABASE_URL (default: the local
// server as postgres). A server that cannot be reached fails the test; it never
// skips.
package storetest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/migrations"
	"github.com/countersign/countersign/store/postgres"
)

// DefaultURL is the test server used when COUNTERSIGN_TEST_DATABASE_URL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// AdminURL returns the URL of the database tests connect to for CREATE DATABASE.
func AdminURL() string {
	if u := os.Getenv("COUNTERSIGN_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

var (
	templateOnce sync.Once
	templateName string
	templateErr  error
)

// NewURL creates a fresh migrated database for this test, dropped when the
// test ends, and returns its URL.
func NewURL(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	templateOnce.Do(func() { templateName, templateErr = ensureTemplate(ctx) })
	if templateErr != nil {
		t.Fatalf("preparing template database (is PostgreSQL running at %s?): %v", redact(AdminURL()), templateErr)
	}
	name := "cs_test_" + randomHex(6)
	admin := connectAdmin(t)
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY", name, templateName)); err != nil {
		t.Fatalf("cloning template: %v", err)
	}
	t.Cleanup(func() { dropDatabase(t, name) })
	return withDatabase(AdminURL(), name)
}

// NewEmptyURL creates an empty database (no schema) for this test, dropped
// when the test ends, and returns its URL.
func NewEmptyURL(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	name := "cs_empty_" + randomHex(6)
	admin := connectAdmin(t)
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("creating empty database: %v", err)
	}
	t.Cleanup(func() { dropDatabase(t, name) })
	return withDatabase(AdminURL(), name)
}

func dropDatabase(t testing.TB, name string) {
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		t.Errorf("dropping %s: %v", name, err)
		return
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
		t.Errorf("dropping %s: %v", name, err)
	}
}

// NewDB opens a pool on a fresh migrated database for this test.
func NewDB(t testing.TB) *postgres.Driver {
	t.Helper()
	db, err := postgres.Open(context.Background(), NewURL(t))
	if err != nil {
		t.Fatalf("opening test database: %v", err)
	}
	t.Cleanup(db.Close)
	return db
}

var (
	sharedOnce sync.Once
	shared     *postgres.Driver
	sharedErr  error
)

// Tx returns a transaction on a database shared by every test of this schema
// version, rolled back when the test ends: for tests that neither commit nor
// rely on locks across connections. The shared database lives as long as the
// template, so test runs leave nothing behind.
func Tx(t testing.TB) pgx.Tx {
	t.Helper()
	ctx := context.Background()
	sharedOnce.Do(func() {
		templateOnce.Do(func() { templateName, templateErr = ensureTemplate(ctx) })
		if templateErr != nil {
			sharedErr = templateErr
			return
		}
		shared, sharedErr = postgres.Open(ctx, withDatabase(AdminURL(), sharedName(templateName)))
	})
	if sharedErr != nil {
		t.Fatalf("preparing shared test database: %v", sharedErr)
	}
	tx, err := shared.Pool.Begin(ctx)
	if err != nil {
		t.Fatalf("beginning test transaction: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// NewRoleName returns a role name no other test uses, and drops the role,
// if anything created it, when the test ends. Roles belong to the whole
// server, so dbURL names the database whose grants to the role are taken back
// first; the database must outlive the role (create it before calling this).
func NewRoleName(t testing.TB, dbURL string) string {
	t.Helper()
	name := "cs_app_" + randomHex(6)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			t.Errorf("dropping role %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)", name).Scan(&exists); err != nil || !exists {
			return
		}
		// DROP OWNED also takes back its grants on this database and its objects.
		for _, stmt := range []string{"DROP OWNED BY " + name, "DROP ROLE " + name} {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Errorf("dropping role %s: %s: %v", name, stmt, err)
				return
			}
		}
	})
	return name
}

// NewAppRoleURL prepares a runtime role on the migrated database at dbURL with
// postgres.Driver.GrantAppRole, dropped when the test ends, and returns the URL that
// connects as it.
func NewAppRoleURL(t testing.TB, dbURL string) string {
	t.Helper()
	ctx := context.Background()
	name := NewRoleName(t, dbURL)
	owner, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatalf("opening test database: %v", err)
	}
	defer owner.Close()
	if _, err := owner.GrantAppRole(ctx, name); err != nil {
		t.Fatalf("granting the runtime role: %v", err)
	}
	return WithUser(dbURL, name)
}

// WithUser returns url connecting as user, without a password.
func WithUser(rawURL, user string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.User = url.User(user)
	return u.String()
}

// UnreachableURL returns rawURL with its host replaced by a loopback port
// nothing listens on: the database out of reach, as in an outage.
func UnreachableURL(t testing.TB, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u.Host = ln.Addr().String()
	ln.Close()
	return u.String()
}

func connectAdmin(t testing.TB) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), AdminURL())
	if err != nil {
		t.Fatalf("connecting to test PostgreSQL at %s: %v", redact(AdminURL()), err)
	}
	return conn
}

// ensureTemplate creates, once per schema version, a migrated database to
// clone from. Test binaries run in parallel, so creation is serialised by an
// advisory lock and built under a temporary name, renamed when complete.
func ensureTemplate(ctx context.Context) (string, error) {
	sum, err := migrationsHash()
	if err != nil {
		return "", err
	}
	name := "cs_template_" + sum
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, AdminURL())
	if err != nil {
		return "", err
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, "SELECT pg_advisory_lock(7260001)"); err != nil {
		return "", err
	}
	defer admin.Exec(context.Background(), "SELECT pg_advisory_unlock(7260001)")
	var exists bool
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if err := buildTemplate(ctx, admin, name); err != nil {
			return "", err
		}
		dropOtherVersions(ctx, admin, sum)
	}
	if err := admin.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", sharedName(name)).Scan(&exists); err != nil {
		return "", err
	}
	if !exists {
		if _, err := admin.Exec(ctx, fmt.Sprintf("CREATE DATABASE %s TEMPLATE %s STRATEGY FILE_COPY", sharedName(name), name)); err != nil {
			return "", err
		}
	}
	return name, nil
}

// buildTemplate migrates a new database under a temporary name and renames
// it when complete, so a crash never leaves a half-built template.
func buildTemplate(ctx context.Context, admin *pgx.Conn, name string) error {
	building := name + "_building"
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+building+" WITH (FORCE)"); err != nil {
		return err
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+building); err != nil {
		return err
	}
	db, err := postgres.Open(ctx, withDatabase(AdminURL(), building))
	if err != nil {
		return err
	}
	_, err = db.Migrate(ctx, nil)
	db.Close()
	if err != nil {
		return err
	}
	if _, err = admin.Exec(ctx, "ALTER DATABASE "+building+" RENAME TO "+name); err != nil {
		return err
	}
	_, err = admin.Exec(ctx, fmt.Sprintf("COMMENT ON DATABASE %s IS 'built %d'", name, time.Now().Unix()))
	return err
}

// staleAfter is how long another schema version's template is kept: two
// checkouts on different branches may be testing against one server at once,
// and dropping the other's template under it would fail its tests.
const staleAfter = 24 * time.Hour

// dropOtherVersions removes the templates and shared databases of other
// schema versions built more than staleAfter ago (or before templates were
// stamped). It is best effort: one still in use stays.
func dropOtherVersions(ctx context.Context, admin *pgx.Conn, sum string) {
	rows, err := admin.Query(ctx, `SELECT d.datname FROM pg_database d
LEFT JOIN pg_database t ON t.datname = replace(d.datname, 'cs_shared_', 'cs_template_')
WHERE (d.datname LIKE 'cs\_template\_%' OR d.datname LIKE 'cs\_shared\_%') AND d.datname NOT LIKE '%' || $1
	AND coalesce(substring(shobj_description(t.oid, 'pg_database') FROM '^built ([0-9]+)$')::bigint, 0) < $2`,
		sum, time.Now().Add(-staleAfter).Unix())
	if err != nil {
		return
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return
	}
	for _, old := range names {
		_, _ = admin.Exec(ctx, "DROP DATABASE IF EXISTS "+old)
	}
}

func sharedName(templateName string) string {
	return strings.Replace(templateName, "cs_template_", "cs_shared_", 1)
}

func migrationsHash() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.Postgres, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(migrations.Postgres, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil))[:12], nil
}

func withDatabase(rawURL, name string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return rawURL
	}
	u.Path = "/" + name
	return u.String()
}

func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparseable url)"
	}
	return u.Redacted()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
