package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
)

func (e executor) DueNudges(ctx context.Context, p store.DueNudgesParams) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, q.Get("due_nudges"), p.Tool, p.After.Microseconds(), p.Now, string(p.Kind), p.Limit)
	return collect[store.Request]("reading requests due a "+string(p.Kind), rows, err)
}

func (e executor) QueueNudge(ctx context.Context, kind store.OutboxKind, requestID string, round int, data map[string]any) (time.Time, bool, error) {
	raw, err := encode(data)
	if err != nil {
		return time.Time{}, false, wrap("encoding nudge", err)
	}
	var at time.Time
	err = e.db.QueryRow(ctx, q.Get("queue_nudge"), requestID, round, raw, string(kind)).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, false, nil
	}
	return at, err == nil, wrap("queueing nudge", err)
}

func (e executor) NudgeQueued(ctx context.Context, requestID string, round int, kind store.NudgeKind) (bool, error) {
	return e.exists(ctx, "reading outbox", q.Get("nudge_queued"), requestID, round, string(kind))
}

func (e executor) PendingByTool(ctx context.Context) ([]store.PendingTool, error) {
	rows, err := e.db.Query(ctx, q.Get("pending_by_tool"))
	return collect[store.PendingTool]("counting pending requests", rows, err)
}
