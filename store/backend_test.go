package store_test

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/embedded"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// backend is one Store under test, with what the contract tests need beside
// the interface: raw SQL on the same database, and its wake-ups.
type backend struct {
	store.Store
	name string
	// exec runs one statement on the backend's database, outside the Store.
	exec func(query string) error
	// queryInt runs a query returning one integer, e.g. a count.
	queryInt func(query string) (int, error)
	// notifier returns the backend's wake-ups, ready to deliver.
	notifier func(t *testing.T) store.Notifier
}

// count runs a counting query and fails the test on error.
func (b *backend) count(t *testing.T, query string) int {
	t.Helper()
	n, err := b.queryInt(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// backends opens a Store per implementation; migrated false leaves the
// database empty.
var backends = []struct {
	name string
	open func(t *testing.T, migrated bool) *backend
}{
	{"postgres", openPostgres},
	{"sqlite", openSQLite},
}

// forEachStore runs test once per backend, each on a fresh migrated database,
// and once more on PostgreSQL connected as the runtime role of
// postgres.Driver.GrantAppRole, which shows that its grants are all serve needs.
func forEachStore(t *testing.T, test func(t *testing.T, b *backend)) {
	t.Helper()
	for _, bk := range append(backends[:len(backends):len(backends)], appRoleBackend) {
		t.Run(bk.name, func(t *testing.T) {
			t.Parallel()
			test(t, bk.open(t, true))
		})
	}
}

var appRoleBackend = struct {
	name string
	open func(t *testing.T, migrated bool) *backend
}{"postgres-app-role", openPostgresAsAppRole}

func openPostgres(t *testing.T, migrated bool) *backend {
	t.Helper()
	url := storetest.NewEmptyURL(t)
	if migrated {
		url = storetest.NewURL(t)
	}
	return openPostgresAs(t, "postgres", url, url)
}

// openPostgresAsAppRole is a store connected as the runtime role; the
// backend's raw statements still run as the owner.
func openPostgresAsAppRole(t *testing.T, _ bool) *backend {
	t.Helper()
	url := storetest.NewURL(t)
	return openPostgresAs(t, "postgres-app-role", storetest.NewAppRoleURL(t, url), url)
}

// openPostgresAs opens the Store on storeURL and runs the backend's raw
// statements on ownerURL.
func openPostgresAs(t *testing.T, name, storeURL, ownerURL string) *backend {
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
	return &backend{
		Store: store.NewLedger(db),
		name:  name,
		exec: func(query string) error {
			_, err := owner.Pool.Exec(ctx, query)
			return err
		},
		queryInt: func(query string) (n int, err error) {
			err = owner.Pool.QueryRow(ctx, query).Scan(&n)
			return n, err
		},
		notifier: func(t *testing.T) store.Notifier {
			listenCtx, cancel := context.WithCancel(ctx)
			l, run, listening := db.Notifier(slog.New(slog.NewTextHandler(io.Discard, nil)))
			done := make(chan struct{})
			go func() { defer close(done); run(listenCtx) }()
			t.Cleanup(func() { cancel(); <-done })
			select {
			case <-listening:
			case <-time.After(10 * time.Second):
				t.Fatal("listener did not start")
			}
			return l
		},
	}
}

func openSQLite(t *testing.T, migrated bool) *backend {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := embedded.Open(ctx, path)
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	t.Cleanup(s.Close)
	if migrated {
		if _, err := s.Migrate(ctx, nil); err != nil {
			t.Fatalf("migrating: %v", err)
		}
	}
	// A connection of the test's own, as another process would have.
	raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	n, _, _ := s.Notifier(nil)
	return &backend{
		Store: store.NewLedger(s),
		name:  "sqlite",
		exec: func(query string) error {
			_, err := raw.ExecContext(ctx, query)
			return err
		},
		queryInt: func(query string) (n int, err error) {
			err = raw.QueryRowContext(ctx, query).Scan(&n)
			return n, err
		},
		notifier: func(*testing.T) store.Notifier { return n },
	}
}

// waitWake fails the test unless wake fires within the deadline.
func waitWake(t *testing.T, wake <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-wake:
	case <-time.After(10 * time.Second):
		t.Fatalf("no wake-up for %s", what)
	}
}

// release starts n goroutines blocked on one signal, runs them together and
// waits for all.
func release(n int, fn func(i int)) {
	start := make(chan struct{})
	done := make(chan struct{}, n)
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			fn(i)
		}()
	}
	close(start)
	for range n {
		<-done
	}
}
