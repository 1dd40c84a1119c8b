package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// defaultMaxConns is the pool size unless the URL sets pool_max_conns.
const defaultMaxConns = 20

// DBTX is what a query needs: a pool, a connection or a transaction.
type DBTX interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// DB is the PostgreSQL store.
type DB struct {
	Pool *pgxpool.Pool
}

// Open connects a pool to the database at url.
func Open(ctx context.Context, url string) (*DB, error) {
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
		return nil, fmt.Errorf("connecting to database: %w", err)
	}
	return &DB{Pool: pool}, nil
}

// Close closes the pool.
func (db *DB) Close() { db.Pool.Close() }

// Ping reports whether the database answers.
func (db *DB) Ping(ctx context.Context) error { return db.Pool.Ping(ctx) }

// InTx runs fn in one transaction, committed when fn returns nil.
func (db *DB) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, db.Pool, fn)
}
