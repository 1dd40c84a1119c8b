package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
)

// PrepareAuditMonths calls countersign_event_partitions_ahead, which runs as
// the schema's owner: the runtime role owns no partition, so cannot create
// one itself.
func (d *Driver) PrepareAuditMonths(ctx context.Context, ahead int) (int, error) {
	var n int
	err := d.Pool.QueryRow(ctx, `SELECT countersign_event_partitions_ahead($1)`, ahead).Scan(&n)
	return n, wrap("creating the audit's partitions", err)
}

// DropAuditMonths calls countersign_drop_event_partitions, which runs as the
// schema's owner, drops only whole months that ended before both before
// and its floor (audit_floor), and records each month's checkpoint.
// It drops one month a call, each its own transaction: the DROP holds
// events until its commit, so intake waits for one DROP, not for the
// next month's digest too.
func (d *Driver) DropAuditMonths(ctx context.Context, before time.Time) (int, error) {
	total := 0
	for {
		var n int
		if err := d.Pool.QueryRow(ctx, `SELECT countersign_drop_event_partitions($1)`, before).Scan(&n); err != nil {
			return total, wrap("dropping audit months", err)
		}
		if n == 0 {
			return total, nil
		}
		total += n
	}
}

func (e executor) AuditCheckpoints(ctx context.Context) ([]store.AuditCheckpoint, error) {
	rows, err := e.db.Query(ctx, q.Get("audit_checkpoints"))
	if err != nil {
		return nil, wrap("reading the audit checkpoints", err)
	}
	defer rows.Close()
	var out []store.AuditCheckpoint
	for rows.Next() {
		var c store.AuditCheckpoint
		if err := rows.Scan(&c.ID, &c.Partition, &c.From, &c.To, &c.Events, &c.Digest, &c.DroppedBy, &c.DroppedAt,
			&c.PrevHash, &c.Hash); err != nil {
			return nil, wrap("reading the audit checkpoints", err)
		}
		out = append(out, c)
	}
	return out, wrap("reading the audit checkpoints", rows.Err())
}

func (e executor) CheckpointHeads(ctx context.Context, id int64, afterRequest string, limit int) ([]store.CheckpointHead, error) {
	if afterRequest == "" {
		afterRequest = noRequest
	}
	rows, err := e.db.Query(ctx, q.Get("checkpoint_heads"), id, afterRequest, limit)
	if err != nil {
		return nil, wrap("reading checkpoint heads", err)
	}
	defer rows.Close()
	var out []store.CheckpointHead
	for rows.Next() {
		var h store.CheckpointHead
		if err := rows.Scan(&h.RequestID, &h.Seq, &h.Hash); err != nil {
			return nil, wrap("reading checkpoint heads", err)
		}
		out = append(out, h)
	}
	return out, wrap("reading checkpoint heads", rows.Err())
}

func (e executor) LastCheckpointHead(ctx context.Context, requestID string) (store.CheckpointHead, bool, error) {
	var h store.CheckpointHead
	err := e.db.QueryRow(ctx, q.Get("last_checkpoint_head"), requestID).Scan(&h.RequestID, &h.Seq, &h.Hash)
	if errors.Is(err, pgx.ErrNoRows) {
		return h, false, nil
	}
	return h, err == nil, wrap("reading checkpoint heads", err)
}

func (e executor) CheckpointHeadFrom(ctx context.Context, requestID string, seq int) (store.CheckpointHead, bool, error) {
	var h store.CheckpointHead
	err := wrap("reading checkpoint heads", e.db.QueryRow(ctx, q.Get("checkpoint_head_from"), requestID, seq).Scan(&h.RequestID, &h.Seq, &h.Hash))
	if errors.Is(err, store.ErrNotFound) {
		return h, false, nil
	}
	return h, err == nil, err
}
