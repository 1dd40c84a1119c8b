package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// pipeline is a transaction that holds back the statements whose only
// answer is their error (an audit event, an outbox row, a callback, an
// execution, a NOTIFY: see executor.later) and sends them in one batch with
// the next statement, or alone before the commit. A decision's transaction
// was thirteen round trips, five of them such writes; each write still runs
// in its place in the transaction, and a held one's error fails the
// statement it went out with, which fails the transaction as it would have.
type pipeline struct {
	pgx.Tx
	held pgx.Batch
}

// hold queues a statement to go out with the next one.
func (p *pipeline) hold(sql string, args ...any) { p.held.Queue(sql, args...) }

// flush sends what is held, alone.
func (p *pipeline) flush(ctx context.Context) error {
	if p.held.Len() == 0 {
		return nil
	}
	b := p.held
	p.held = pgx.Batch{}
	return p.Tx.SendBatch(ctx, &b).Close()
}

// send sends what is held followed by sql, and returns the results
// positioned at sql's.
func (p *pipeline) send(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := p.held
	p.held = pgx.Batch{}
	b.Queue(sql, args...)
	br := p.Tx.SendBatch(ctx, &b)
	for range b.Len() - 1 {
		if _, err := br.Exec(); err != nil {
			br.Close()
			return nil, err
		}
	}
	return br, nil
}

func (p *pipeline) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if p.held.Len() == 0 {
		return p.Tx.Exec(ctx, sql, args...)
	}
	br, err := p.send(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if closeErr := br.Close(); err == nil {
		err = closeErr
	}
	return tag, err
}

func (p *pipeline) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if p.held.Len() == 0 {
		return p.Tx.Query(ctx, sql, args...)
	}
	br, err := p.send(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return batchRows{Rows: rows, results: br}, nil
}

func (p *pipeline) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if p.held.Len() == 0 {
		return p.Tx.QueryRow(ctx, sql, args...)
	}
	rows, err := p.Query(ctx, sql, args...)
	return heldRow{rows: rows, err: err}
}

// SendBatch sends what is held ahead of b's statements. Read its results
// through b's callbacks (Close), as the driver's batches do: read one by
// one, the held statements' results would come first.
func (p *pipeline) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if p.held.Len() == 0 {
		return p.Tx.SendBatch(ctx, b)
	}
	merged := p.held
	p.held = pgx.Batch{}
	merged.QueuedQueries = append(merged.QueuedQueries, b.QueuedQueries...)
	return p.Tx.SendBatch(ctx, &merged)
}

// batchRows are a statement's rows read from a batch, which is closed with
// them.
type batchRows struct {
	pgx.Rows
	results pgx.BatchResults
}

func (r batchRows) Close() {
	r.Rows.Close()
	r.results.Close()
}

// heldRow is QueryRow's row when the query went out with held statements:
// the first row, or pgx.ErrNoRows, as pgx's own.
type heldRow struct {
	rows pgx.Rows
	err  error
}

func (r heldRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}
