package embedded

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"time"

	"github.com/countersign/countersign/store"
)

// querier is what a statement needs: a pool or a transaction.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// writeTx is a write transaction that holds the wake-ups the Ledger handed
// it (Notify) until it commits, as PostgreSQL holds a transaction's NOTIFYs.
type writeTx struct {
	*sql.Tx
	// now is the clock of the whole transaction, as PostgreSQL's now().
	now  time.Time
	wake store.Wakeups
}

// Notify wakes w's waiters once the transaction commits, or at once outside
// one. Only this process shares the file, so the Hub is every waiter.
func (e executor) Notify(_ context.Context, w store.Wakeups) error {
	if e.tx == nil {
		wake(e.d.hub, w)
		return nil
	}
	e.tx.wake.Changed = append(e.tx.wake.Changed, w.Changed...)
	e.tx.wake.Ready = e.tx.wake.Ready || w.Ready
	return nil
}

// wake signals the hub's subscribers on each changed request and, when
// w.Ready, the dispatcher.
func wake(hub *store.Hub, w store.Wakeups) {
	for _, id := range w.Changed {
		hub.NotifyChange(canonicalID(id))
	}
	if w.Ready {
		hub.NotifyReady()
	}
}

// executor runs the primitives outside a transaction (tx nil: reads on the
// reader pool, each write in a transaction of its own) or in one.
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

// write runs fn in the transaction, or in a durable one of its own.
func (e executor) write(ctx context.Context, fn func(tx *writeTx) error) error {
	if e.tx != nil {
		return fn(e.tx)
	}
	return e.d.transact(ctx, true, fn)
}

// orClock returns t, or the transaction's clock when t is zero.
func (tx *writeTx) orClock(t time.Time) time.Time {
	if t.IsZero() {
		return tx.now
	}
	return t
}

// clock returns now, or the transaction's clock when now is nil, at the
// stored precision.
func (tx *writeTx) clock(now *time.Time) time.Time {
	if now != nil {
		return fromMicros(now.UnixMicro())
	}
	return tx.now
}

// transact runs fn in one transaction on the writer connection (BEGIN
// IMMEDIATE) and commits when fn returns nil; after the commit it wakes the
// subscribers the Ledger asked for (Notify). A transaction that is not durable commits
// without syncing the WAL (synchronous NORMAL): it survives a crash of the
// process but may be lost with the machine, like PostgreSQL's
// synchronous_commit off. SQLite refuses to change synchronous inside a
// transaction, so it is set around it on the one writer connection.
func (s *Driver) transact(ctx context.Context, durable bool, fn func(tx *writeTx) error) error {
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
	if err := fn(tx); err != nil {
		_ = sqlTx.Rollback()
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return wrap("committing", err)
	}
	wake(s.hub, tx.wake)
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
