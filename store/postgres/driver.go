package postgres

import (
	"context"
	"embed"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/countersign/countersign/internal/namedsql"
	"github.com/countersign/countersign/store"
)

// defaultMaxConns is the pool size unless the URL sets pool_max_conns.
const defaultMaxConns = 20

// dbtx is what a statement needs: a pool, a connection or a transaction.
type dbtx interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// Driver is the ledger on PostgreSQL, through a pgx pool.
type Driver struct {
	Pool *pgxpool.Pool
}

var _ store.Driver = (*Driver)(nil)

// Open connects a pool to the database at url.
func Open(ctx context.Context, url string) (*Driver, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parsing database url: %w", err)
	}
	// pgxpool's default (the CPU count, at least 4) starves a server that
	// holds a LISTEN connection, group-commit flushers and long-polls;
	// pool_max_conns in the URL still wins.
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = defaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to database: %w", unavailable(err))
	}
	return &Driver{Pool: pool}, nil
}

// Close closes the pool.
func (d *Driver) Close() { d.Pool.Close() }

// Ping reports whether the database answers.
func (d *Driver) Ping(ctx context.Context) error { return unavailable(d.Pool.Ping(ctx)) }

// Reader reads on the pool.
func (d *Driver) Reader() store.Reader { return executor{d.Pool} }

// Write runs fn on the pool: its statement commits by itself, with no
// BEGIN and COMMIT round trips around it.
func (d *Driver) Write(_ context.Context, fn func(store.Executor) error) error {
	return fn(executor{d.Pool})
}

// Batch runs the one-statement hot paths on the pool.
func (d *Driver) Batch() store.BatchExecutor { return executor{d.Pool} }

// InTx runs fn in one transaction. A transaction that is not durable
// commits without waiting for the WAL flush (synchronous_commit off).
func (d *Driver) InTx(ctx context.Context, durable bool, fn func(store.Executor) error) error {
	return unavailable(d.inTx(ctx, func(tx pgx.Tx) error {
		if !durable {
			if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = off"); err != nil {
				return err
			}
		}
		p := &pipeline{Tx: tx}
		if err := fn(executor{p}); err != nil {
			return err
		}
		return wrap("writing", p.flush(ctx))
	}))
}

func (d *Driver) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, d.Pool, fn)
}

// Notifier returns a Listener on its own connection, twice: as what wakes
// waiters, and as the service that listens between its Start and Stop.
func (d *Driver) Notifier(logger *slog.Logger) (store.Notifier, store.Service, <-chan struct{}) {
	l := newListener(d, logger)
	return l, l, l.listening
}

// Remote is true: every statement is a round trip to the server.
func (d *Driver) Remote() bool { return true }

// executor runs the primitives on a pool or in a transaction.
type executor struct{ db dbtx }

var _ store.BatchExecutor = executor{}

// later runs a statement whose only answer is its error. In a transaction
// it is held and goes out with the next statement (pipeline), and its error
// with that statement's.
func (e executor) later(ctx context.Context, sql string, args ...any) error {
	if p, ok := e.db.(*pipeline); ok {
		p.hold(sql, args...)
		return nil
	}
	_, err := e.db.Exec(ctx, sql, args...)
	return err
}

//go:embed queries.sql
var queryFile embed.FS

// q holds the driver's statements (queries.sql).
var q = namedsql.MustLoad(queryFile, "queries.sql")
