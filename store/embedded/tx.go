package embedded

import (
	"context"
	"database/sql"
	"fmt"
)

// querier is what a statement needs: a pool or a transaction.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// writeTx is a write transaction that remembers which wake-ups its commit
// owes, as PostgreSQL's triggers queue NOTIFYs that fire on commit.
type writeTx struct {
	*sql.Tx
	changed map[string]struct{}
	ready   bool
}

// requestChanged records a change to a request's status or round, or to the
// state of one of its executions.
func (tx *writeTx) requestChanged(requestID string) {
	if tx.changed == nil {
		tx.changed = make(map[string]struct{})
	}
	tx.changed[requestID] = struct{}{}
}

// executionMoved records an execution entering state: its request changed,
// and a ready execution wakes the dispatcher.
func (tx *writeTx) executionMoved(requestID, state string) {
	tx.requestChanged(requestID)
	if state == "ready" {
		tx.ready = true
	}
}

// write runs fn in one transaction on the writer connection (BEGIN IMMEDIATE)
// and commits when fn returns nil; after the commit it wakes the subscribers
// of what changed.
func (s *Store) write(ctx context.Context, fn func(tx *writeTx) error) error {
	sqlTx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("beginning transaction: %w", err)
	}
	tx := &writeTx{Tx: sqlTx}
	if err := fn(tx); err != nil {
		_ = sqlTx.Rollback()
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return fmt.Errorf("committing: %w", translate(err))
	}
	for id := range tx.changed {
		s.NotifyChange(id)
	}
	if tx.ready {
		s.NotifyReady()
	}
	return nil
}
