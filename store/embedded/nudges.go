package embedded

import (
	"context"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) DueNudges(ctx context.Context, p store.DueNudgesParams) ([]store.Request, error) {
	now := clock(p.Now)
	return e.requests(ctx, q.Get("due_nudges"), p.Tool, micros(now.Add(-p.After)), string(p.Kind), p.Limit, micros(now))
}

func (e executor) QueueNudge(ctx context.Context, requestID string, round int, data map[string]any) (at time.Time, ok bool, err error) {
	raw, err := encodeData(data)
	if err != nil {
		return time.Time{}, false, err
	}
	err = e.write(ctx, func(tx *writeTx) error {
		var created int64
		err := tx.QueryRowContext(ctx, q.Get("queue_nudge"), canonicalID(requestID), round, raw, micros(tx.clock(nil))).Scan(&created)
		if ok, err = found("queueing nudge", err); ok {
			at = fromMicros(created)
		}
		return err
	})
	return at, ok, err
}

func (e executor) NudgeQueued(ctx context.Context, requestID string, round int, kind store.NudgeKind) (bool, error) {
	return e.exists(ctx, "reading outbox", q.Get("nudge_queued"), canonicalID(requestID), round, string(kind))
}

func (e executor) PendingByTool(ctx context.Context) ([]store.PendingTool, error) {
	now := clock(nil)
	rows, err := e.read().QueryContext(ctx, q.Get("pending_by_tool"))
	return collect("counting pending requests", func(row scanner) (store.PendingTool, error) {
		var (
			p      store.PendingTool
			oldest int64
		)
		if err := row.Scan(&p.Tool, &p.Count, &oldest); err != nil {
			return store.PendingTool{}, err
		}
		p.Oldest, p.Now = fromMicros(oldest), now
		return p, nil
	}, rows, err)
}
