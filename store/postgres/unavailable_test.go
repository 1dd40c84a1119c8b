package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/countersign/countersign/store"
	"github.com/countersign/countersign/store/postgres"
	"github.com/countersign/countersign/store/storetest"
)

// closedPortAddr returns a loopback address nothing listens on.
func closedPortAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// closedPortURL returns url with its host moved to a loopback port nothing
// listens on.
func closedPortURL(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = closedPortAddr(t)
	return u.String()
}

func TestIsUnavailableOnRealOutages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dbURL := storetest.NewURL(t)
	errs := map[string]error{}

	// Nothing listens.
	_, errs["connect to a closed port"] = pgx.Connect(ctx, closedPortURL(t, dbURL))
	down, err := postgres.Open(ctx, closedPortURL(t, dbURL))
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	errs["ping through a pool on a closed port"] = down.Ping(ctx)
	_, errs["read through a pool on a closed port"] = store.NewLedger(down, store.Options{}).RequestByKey(ctx, "wa_x")

	// The server ends the connection (as on shutdown or a restart).
	db, err := postgres.Open(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	var terminated bool
	if err := admin.QueryRow(ctx, `SELECT pg_terminate_backend($1, 10000)`, pid).Scan(&terminated); err != nil || !terminated {
		t.Fatalf("terminating backend %d: %v %v", pid, terminated, err)
	}
	_, errs["statement on a terminated connection"] = conn.Exec(ctx, `SELECT 1`)
	_, errs["statement after the terminated one"] = conn.Exec(ctx, `SELECT 1`)
	conn.Release()
	var pgErr *pgconn.PgError
	if !errors.As(errs["statement on a terminated connection"], &pgErr) || pgErr.Code != "57P01" {
		t.Errorf("terminated connection = %v, want SQLSTATE 57P01", errs["statement on a terminated connection"])
	}

	// The pool is closed (as serve shuts down).
	db.Close()
	_, errs["read through a closed pool"] = store.NewLedger(db, store.Options{}).RequestByKey(ctx, "wa_x")

	for name, err := range errs {
		// What went through the driver is classified already; the raw
		// statements are classified as every primitive does.
		if !strings.HasPrefix(name, "read") && !strings.HasPrefix(name, "ping") {
			err = postgres.Classify(err)
		}
		if !store.IsUnavailable(err) {
			t.Errorf("%s: IsUnavailable(%v) = false, want true", name, err)
		}
	}
}

func TestIsUnavailableNotForAnswers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := storetest.NewDB(t)
	ledger := store.NewLedger(db, store.Options{})
	errs := map[string]error{"nil": nil, "not found": store.ErrNotFound}
	_, errs["division by zero"] = db.Pool.Exec(ctx, `SELECT 1/0`)
	_, errs["text with NUL"] = db.Pool.Exec(ctx, `SELECT $1::text`, "a\x00")
	_, errs["unknown table"] = db.Pool.Exec(ctx, `SELECT * FROM no_such_table`)
	_, errs["missing key"] = ledger.RequestByKey(ctx, "wa_missing")
	// A network error that is not the database's, as from a Slack call.
	_, errs["HTTP to a closed port"] = http.Get("http://" + closedPortAddr(t))
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, errs["cancelled by the caller"] = ledger.RequestByKey(cancelled, "wa_x")
	for name, err := range errs {
		if store.IsUnavailable(postgres.Classify(err)) {
			t.Errorf("%s: IsUnavailable(%v) = true, want false", name, err)
		}
	}
}

// SQLSTATEs a test cannot provoke from a healthy server, and wrapped errors.
func TestIsUnavailableByCode(t *testing.T) {
	t.Parallel()
	for code, want := range map[string]bool{
		"57P01": true, "57P02": true, "57P03": true, "08006": true, "08001": true, "53300": true,
		"23505": false, "22021": false, "40001": false, "28P01": false,
	} {
		err := fmt.Errorf("reading requests: %w", &pgconn.PgError{Code: code})
		if got := store.IsUnavailable(postgres.Classify(err)); got != want {
			t.Errorf("SQLSTATE %s: IsUnavailable = %v, want %v", code, got, want)
		}
	}
	// pgx returns a connection cut mid-statement as it read it.
	for _, err := range []error{fmt.Errorf("reading request: %w", io.ErrUnexpectedEOF), fmt.Errorf("x: %w", store.ErrUnavailable)} {
		if !store.IsUnavailable(postgres.Classify(err)) {
			t.Errorf("IsUnavailable(%v) = false, want true", err)
		}
	}
}
