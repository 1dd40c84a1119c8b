package embedded

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"time"

	"github.com/countersign/countersign/store"
)

// PrepareAuditMonths has nothing to do: the embedded store keeps its events
// in one table and drops a month by deleting it (DropAuditMonths).
func (s *Driver) PrepareAuditMonths(context.Context, int) (int, error) { return 0, nil }

// DropAuditMonths deletes, month by month (UTC), the events of each whole
// month that ended before before, in one write transaction with the
// month's checkpoint. The delete passes the append-only trigger only while
// audit_drop names the month's end, inside that transaction: the driver's
// own path, which no statement of the ledger takes. The embedded store has
// no roles, so no floor: whoever can write its file can do anything with it,
// and the chain and checkpoints are what show it.
func (s *Driver) DropAuditMonths(ctx context.Context, before time.Time) (int, error) {
	dropped := 0
	err := s.InTx(ctx, true, func(ex store.Executor) error {
		e := ex.(executor)
		for {
			var oldest sql.NullInt64
			if err := e.tx.QueryRowContext(ctx, q.Get("oldest_event_at")).Scan(&oldest); err != nil {
				return wrap("reading the oldest event", err)
			}
			if !oldest.Valid {
				return nil
			}
			from := monthOf(fromMicros(oldest.Int64))
			to := from.AddDate(0, 1, 0)
			if to.After(before) {
				return nil
			}
			if err := e.dropMonth(ctx, from, to); err != nil {
				return err
			}
			dropped++
		}
	})
	if err != nil {
		return 0, err
	}
	return dropped, nil
}

// monthOf is the start of t's month in UTC.
func monthOf(t time.Time) time.Time {
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
}

// dropMonth records the checkpoint of the events in [from, to) and deletes
// them.
func (e executor) dropMonth(ctx context.Context, from, to time.Time) error {
	c := store.AuditCheckpoint{Partition: "events_" + from.Format("200601"), From: from, To: to,
		DroppedBy: "countersign", DroppedAt: fromMicros(micros(e.tx.now))}
	rows, err := e.tx.QueryContext(ctx, q.Get("month_events"), micros(from), micros(to))
	events, err := collect("reading a month's events", func(row scanner) (store.CheckpointHead, error) {
		var h store.CheckpointHead
		return scanInto("reading a month's events", row, &h, &h.RequestID, &h.Seq, &h.Hash)
	}, rows, err)
	if err != nil {
		return err
	}
	sum := sha256.New()
	var heads []store.CheckpointHead
	for i, ev := range events {
		if i > 0 {
			sum.Write([]byte{'\n'})
		}
		sum.Write([]byte(ev.Hash))
		if i+1 == len(events) || events[i+1].RequestID != ev.RequestID {
			heads = append(heads, ev)
		}
	}
	c.Events, c.Digest = int64(len(events)), hex.EncodeToString(sum.Sum(nil))
	digest := store.NewHeadsDigest()
	for _, h := range heads {
		digest.Add(h)
	}
	if err := e.tx.QueryRowContext(ctx, q.Get("next_checkpoint_id")).Scan(&c.ID); err != nil {
		return wrap("numbering the checkpoint", err)
	}
	if err := e.tx.QueryRowContext(ctx, q.Get("last_checkpoint_hash")).Scan(&c.PrevHash); err != nil {
		return wrap("reading the last checkpoint", err)
	}
	c.Hash = store.CheckpointHash(c, digest.Sum())
	if err := e.tx.exec(ctx, "recording the checkpoint", q.Get("insert_checkpoint"), c.ID, c.Partition, micros(c.From),
		micros(c.To), c.Events, c.Digest, c.DroppedBy, micros(c.DroppedAt), c.PrevHash, c.Hash, micros(c.From), micros(c.To)); err != nil {
		return err
	}
	for _, h := range heads {
		if err := e.tx.exec(ctx, "recording the checkpoint", q.Get("insert_checkpoint_head"), c.ID, h.RequestID, h.Seq, h.Hash); err != nil {
			return err
		}
	}
	for _, step := range []struct {
		query string
		args  []any
	}{
		{"allow_drop", []any{micros(to)}},
		{"delete_month", []any{micros(from), micros(to)}},
		{"end_drop", nil},
	} {
		if err := e.tx.exec(ctx, "dropping "+c.Partition, q.Get(step.query), step.args...); err != nil {
			return err
		}
	}
	return nil
}

func (e executor) AuditCheckpoints(ctx context.Context) ([]store.AuditCheckpoint, error) {
	rows, err := e.read().QueryContext(ctx, q.Get("audit_checkpoints"))
	return collect("reading the audit checkpoints", func(row scanner) (store.AuditCheckpoint, error) {
		var c store.AuditCheckpoint
		return scanInto("reading the audit checkpoints", row, &c, &c.ID, &c.Partition, at{t: &c.From}, at{t: &c.To},
			&c.Events, &c.Digest, &c.DroppedBy, at{t: &c.DroppedAt}, &c.PrevHash, &c.Hash)
	}, rows, err)
}

func (e executor) CheckpointHeads(ctx context.Context, id int64, afterRequest string, limit int) ([]store.CheckpointHead, error) {
	rows, err := e.read().QueryContext(ctx, q.Get("checkpoint_heads"), id, canonicalID(afterRequest), limit)
	return collect("reading checkpoint heads", func(row scanner) (store.CheckpointHead, error) {
		var h store.CheckpointHead
		return scanInto("reading checkpoint heads", row, &h, &h.RequestID, &h.Seq, &h.Hash)
	}, rows, err)
}

func (e executor) LastCheckpointHead(ctx context.Context, requestID string) (store.CheckpointHead, bool, error) {
	var h store.CheckpointHead
	_, err := scanInto("reading checkpoint heads", e.read().QueryRowContext(ctx, q.Get("last_checkpoint_head"), canonicalID(requestID)),
		&h, &h.RequestID, &h.Seq, &h.Hash)
	ok, err := found("reading checkpoint heads", err)
	return h, ok, err
}

func (e executor) CheckpointHeadFrom(ctx context.Context, requestID string, seq int) (store.CheckpointHead, bool, error) {
	var h store.CheckpointHead
	_, err := scanInto("reading checkpoint heads", e.read().QueryRowContext(ctx, q.Get("checkpoint_head_from"), canonicalID(requestID), seq),
		&h, &h.RequestID, &h.Seq, &h.Hash)
	ok, err := found("reading checkpoint heads", err)
	return h, ok, err
}
