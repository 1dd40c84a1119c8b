package postgres

import (
	"context"

	"github.com/countersign/countersign/store"
)

// MarkRestored flags the unsettled executions and records the restore in
// one statement.
func (e executor) MarkRestored(ctx context.Context, p store.RestoreParams) (store.Restore, error) {
	var r store.Restore
	err := e.db.QueryRow(ctx, q.Get("mark_restored"), p.Now, p.Window.Microseconds(), p.Source).
		Scan(&r.ID, &r.RestoredAt, &r.GuardUntil, &r.Flagged)
	return r, wrap("recording the restore", err)
}
