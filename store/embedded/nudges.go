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

func (e executor) QueueNudge(ctx context.Context, kind store.OutboxKind, requestID string, round int, data map[string]any) (time.Time, bool, error) {
	var created time.Time
	ok, err := found("queueing nudge", e.tx.QueryRowContext(ctx, q.Get("queue_nudge"), canonicalID(requestID), round, jsonData(data),
		micros(e.tx.now), string(kind)).Scan(at{t: &created}))
	return created, ok, err
}

func (e executor) NudgeQueued(ctx context.Context, requestID string, round int, kind store.NudgeKind) (bool, error) {
	return e.exists(ctx, "reading outbox", q.Get("nudge_queued"), canonicalID(requestID), round, string(kind))
}

func (e executor) PendingByTool(ctx context.Context) ([]store.PendingTool, error) {
	now := clock(nil)
	rows, err := e.read().QueryContext(ctx, q.Get("pending_by_tool"))
	return collect("counting pending requests", func(row scanner) (store.PendingTool, error) {
		p := store.PendingTool{Now: now}
		return scanInto("counting pending requests", row, &p, &p.Tool, &p.Count, at{t: &p.Oldest})
	}, rows, err)
}
