package embedded

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"time"

	"github.com/countersign/countersign/store"
)

// querier is what a read needs: the reader pool or a transaction.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// executor runs the primitives: reads on the reader pool (tx nil, see
// Driver.Reader) or in a transaction, writes only in one (Driver.InTx and
// Driver.Write open it; every write primitive uses tx).
type executor struct {
	d  *Driver
	tx *writeTx
}

var _ store.Executor = executor{}

// read is where a read runs: in the transaction, which sees its own writes,
// or on the reader pool.
func (e executor) read() querier {
	if e.tx != nil {
		return e.tx
	}
	return e.d.reader
}

// writeTx is a write transaction that holds the wake-ups the Ledger handed
// it (Notify) until it commits, as PostgreSQL holds a transaction's NOTIFYs.
type writeTx struct {
	*sql.Tx
	// now is the clock of the whole transaction, as PostgreSQL's now().
	now  time.Time
	wake store.Wakeups
}

// Notify wakes w's waiters once the transaction commits. Only this process
// shares the file, so the Hub is every waiter.
func (e executor) Notify(_ context.Context, w store.Wakeups) error {
	e.tx.wake.Changed = append(e.tx.wake.Changed, w.Changed...)
	e.tx.wake.Ready = e.tx.wake.Ready || w.Ready
	return nil
}

// clock returns now, or the transaction's clock when now is nil, at the
// stored precision.
func (tx *writeTx) clock(now *time.Time) time.Time {
	if now != nil {
		return fromMicros(now.UnixMicro())
	}
	return tx.now
}

// orClock returns t, or the transaction's clock when t is zero.
func (tx *writeTx) orClock(t time.Time) time.Time {
	if t.IsZero() {
		return tx.now
	}
	return t
}

// exec runs one write statement.
func (tx *writeTx) exec(ctx context.Context, what, query string, args ...any) error {
	_, err := tx.ExecContext(ctx, query, args...)
	return wrap(what, err)
}

// Write runs fn in a durable transaction: SQLite writes only in one, on the
// one writer connection.
func (s *Driver) Write(ctx context.Context, fn func(store.Executor) error) error {
	return s.InTx(ctx, true, fn)
}

// InTx runs fn in one transaction on the writer connection (BEGIN
// IMMEDIATE) and commits when fn returns nil; after the commit it wakes the
// subscribers the Ledger asked for (Notify). A transaction that is not
// durable commits without syncing the WAL (synchronous NORMAL): it survives
// a crash of the process but may be lost with the machine, like
// PostgreSQL's synchronous_commit off. SQLite refuses to change synchronous
// inside a transaction, so it is set around it on the one writer
// connection.
func (s *Driver) InTx(ctx context.Context, durable bool, fn func(store.Executor) error) error {
	conn, err := s.writer.Conn(ctx)
	if err != nil {
		return wrap("beginning transaction", err)
	}
	defer conn.Close()
	if !durable {
		if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = NORMAL"); err != nil {
			return wrap("relaxing durability", err)
		}
		defer restoreDurability(conn)
	}
	sqlTx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return wrap("beginning transaction", err)
	}
	tx := &writeTx{Tx: sqlTx, now: clock(nil)}
	if err := fn(executor{d: s, tx: tx}); err != nil {
		_ = sqlTx.Rollback()
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return wrap("committing", err)
	}
	for _, id := range tx.wake.Changed {
		s.hub.NotifyChange(canonicalID(id))
	}
	if tx.wake.Ready {
		s.hub.NotifyReady()
	}
	return nil
}

// restoreDurability puts the writer connection back to synchronous FULL, or
// discards it: a connection that would commit without syncing must not
// serve the next writer.
func restoreDurability(conn *sql.Conn) {
	if _, err := conn.ExecContext(context.Background(), "PRAGMA synchronous = FULL"); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}
