package embedded

import (
	"context"

	"github.com/countersign/countersign/store"
)

// MarkRestored flags the unsettled executions and records the restore, in
// the caller's transaction.
func (e executor) MarkRestored(ctx context.Context, p store.RestoreParams) (store.Restore, error) {
	r := store.Restore{RestoredAt: e.tx.clock(p.Now)}
	r.GuardUntil = r.RestoredAt.Add(p.Window)
	res, err := e.tx.ExecContext(ctx, q.Get("flag_unsettled_executions"))
	if err != nil {
		return store.Restore{}, wrap("flagging unsettled executions", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return store.Restore{}, wrap("flagging unsettled executions", err)
	}
	r.Flagged = int(n)
	err = e.tx.QueryRowContext(ctx, q.Get("insert_restore"), micros(r.RestoredAt), micros(r.GuardUntil), p.Source, r.Flagged).Scan(&r.ID)
	return r, wrap("recording the restore", err)
}
