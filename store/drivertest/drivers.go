package drivertest

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// The drivers under test.
var (
	// Postgres is the PostgreSQL driver on a database cloned from the
	// migrated template.
	Postgres = Driver{"postgres", func(t *testing.T, migrated bool) *Backend {
		t.Helper()
		url := storetest.NewEmptyURL(t)
		if migrated {
			url = storetest.NewURL(t)
		}
		return openPostgres(t, "postgres", url, url, nil)
	}}
	// PostgresAppRole is PostgreSQL connected as the runtime role of
	// postgres.Driver.GrantAppRole, which shows that its grants are all
	// serve needs; raw statements still run as the owner.
	PostgresAppRole = Driver{"postgres-app-role", func(t *testing.T, _ bool) *Backend {
		t.Helper()
		url := storetest.NewURL(t)
		return openPostgres(t, "postgres-app-role", storetest.NewAppRoleURL(t, url), url, nil)
	}}
	// PostgresComposed is PostgreSQL without its one-statement hot paths
	// (store.BatchExecutor): the Ledger composes them from primitives, as
	// on SQLite, and must write the same rows.
	PostgresComposed = Driver{"postgres-composed", func(t *testing.T, _ bool) *Backend {
		t.Helper()
		url := storetest.NewURL(t)
		return openPostgres(t, "postgres-composed", url, url, func(d store.Driver) store.Driver { return composed{d} })
	}}
	// SQLite is the embedded driver on a new file.
	SQLite = Driver{"sqlite", openSQLite}
)

// PostgresAt is the PostgreSQL driver on the database at url (a test's own,
// or one behind a proxy that a test cuts), as its owner.
func PostgresAt(t testing.TB, url string) *Backend {
	t.Helper()
	return openPostgres(t, "postgres", url, url, nil)
}

// openPostgres opens the Store on storeURL and runs the backend's raw
// statements on ownerURL.
func openPostgres(t testing.TB, name, storeURL, ownerURL string, wrap func(store.Driver) store.Driver) *Backend {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, storeURL)
	if err != nil {
		t.Fatalf("opening test database: %v", err)
	}
	t.Cleanup(db.Close)
	owner := db
	if ownerURL != storeURL {
		if owner, err = postgres.Open(ctx, ownerURL); err != nil {
			t.Fatalf("opening test database: %v", err)
		}
		t.Cleanup(owner.Close)
	}
	var d store.Driver = db
	if wrap != nil {
		d = wrap(db)
	}
	return &Backend{
		Store: store.NewLedger(d, store.Options{}),
		Name:  name,
		Exec: func(query string, args ...any) error {
			_, err := owner.Pool.Exec(ctx, query, args...)
			return err
		},
		QueryStrings: func(query string) ([]string, error) {
			rows, err := owner.Pool.Query(ctx, query)
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, pgx.RowTo[string])
		},
		QueryInt: func(query string, args ...any) (n int, err error) {
			err = owner.Pool.QueryRow(ctx, query, args...).Scan(&n)
			return n, err
		},
		Notifier: func(t testing.TB) store.Notifier {
			n, listener, listening := db.Notifier(slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err := listener.Start(ctx); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = listener.Stop(context.Background()) })
			select {
			case <-listening:
			case <-time.After(10 * time.Second):
				t.Fatal("listener did not start")
			}
			return n
		},
	}
}

func openSQLite(t *testing.T, migrated bool) *Backend {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	d, err := embedded.Open(ctx, path)
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	t.Cleanup(d.Close)
	if migrated {
		if _, err := d.Migrate(ctx, nil); err != nil {
			t.Fatalf("migrating: %v", err)
		}
	}
	// A connection of the test's own, as another process would have.
	raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	n, _, _ := d.Notifier(nil)
	return &Backend{
		Store: store.NewLedger(d, store.Options{}),
		Name:  "sqlite",
		Exec: func(query string, args ...any) error {
			_, err := raw.ExecContext(ctx, query, args...)
			return err
		},
		QueryStrings: func(query string) (out []string, err error) {
			rows, err := raw.QueryContext(ctx, query)
			if err != nil {
				return nil, err
			}
			defer rows.Close()
			for rows.Next() {
				var s string
				if err := rows.Scan(&s); err != nil {
					return nil, err
				}
				out = append(out, s)
			}
			return out, rows.Err()
		},
		QueryInt: func(query string, args ...any) (n int, err error) {
			err = raw.QueryRowContext(ctx, query, args...).Scan(&n)
			return n, err
		},
		Notifier: func(testing.TB) store.Notifier { return n },
	}
}

// composed hides a driver's store.BatchExecutor.
type composed struct{ store.Driver }

type primitives struct{ store.Executor }

func (c composed) Batch() store.BatchExecutor { return nil }

func (c composed) Write(ctx context.Context, fn func(store.Executor) error) error {
	return c.Driver.Write(ctx, func(ex store.Executor) error { return fn(primitives{ex}) })
}

func (c composed) InTx(ctx context.Context, durable bool, fn func(store.Executor) error) error {
	return c.Driver.InTx(ctx, durable, func(ex store.Executor) error { return fn(primitives{ex}) })
}

// ForEach runs test once per driver a service runs on (PostgreSQL, then
// SQLite), each as a subtest named after it; the two run in parallel with
// the other tests, and test calls t.Parallel itself when its runs may
// overlap.
func ForEach(t *testing.T, test func(t *testing.T, d *Driver)) {
	t.Helper()
	t.Parallel()
	for _, d := range []Driver{Postgres, SQLite} {
		t.Run(d.Name, func(t *testing.T) { test(t, &d) })
	}
}
