package embedded

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) InsertCallbacks(ctx context.Context, rows []store.NewCallback) error {
	for _, c := range rows {
		at := e.tx.orClock(c.At)
		if err := e.tx.exec(ctx, "queueing callbacks", q.Get("insert_callback"), newID(), canonicalID(c.RequestID), c.Agent,
			string(c.Event), micros(at), micros(at.Add(store.CallbackRetryWindow))); err != nil {
			return err
		}
	}
	return nil
}

func (e executor) ClaimCallbacks(ctx context.Context, limit int, lease time.Duration) ([]store.Callback, error) {
	rows, err := e.tx.QueryContext(ctx, q.Get("claim_callbacks"), micros(e.tx.now), lease.Microseconds(), limit)
	return collect("claiming callbacks", scanCallback, rows, err)
}

func (e executor) MarkCallbackDelivered(ctx context.Context, claimed store.Callback, status int) error {
	return e.tx.exec(ctx, "marking callback delivered", q.Get("mark_callback_delivered"), claimed.ID, status,
		micros(e.tx.now), micros(claimed.NextAttemptAt))
}

func (e executor) RetryCallback(ctx context.Context, p store.RetryCallbackParams) (state store.CallbackState, err error) {
	err = e.tx.QueryRowContext(ctx, q.Get("retry_callback"), p.Claimed.ID, p.Delay.Microseconds(), p.Status, p.Reason,
		micros(e.tx.now), micros(p.Claimed.NextAttemptAt)).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", store.ErrNotFound
	}
	return state, wrap("rescheduling callback", err)
}

func (e executor) RenewCallback(ctx context.Context, claimed store.Callback, lease time.Duration) (renewed time.Time, err error) {
	err = e.tx.QueryRowContext(ctx, q.Get("renew_callback"), claimed.ID, micros(claimed.NextAttemptAt),
		micros(e.tx.now), lease.Microseconds()).Scan(at{t: &renewed})
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, store.ErrNotFound
	}
	return renewed, wrap("renewing a callback claim", err)
}

func (e executor) LatestCallback(ctx context.Context, requestID string) (store.Callback, error) {
	return scanCallback(e.read().QueryRowContext(ctx, q.Get("latest_callback"), canonicalID(requestID)))
}

func (e executor) RedriveCallback(ctx context.Context, requestID string, window time.Duration) (store.Callback, bool, error) {
	cb, err := scanCallback(e.tx.QueryRowContext(ctx, q.Get("redrive_callback"), canonicalID(requestID),
		micros(e.tx.now), window.Microseconds()))
	ok, err := found("redriving callback", err)
	return cb, ok, err
}

func (e executor) CountCallbackBacklog(ctx context.Context) (int, error) {
	var n int
	err := e.read().QueryRowContext(ctx, q.Get("count_callback_backlog")).Scan(&n)
	return n, wrap("counting callbacks", err)
}

func (e executor) CountOutboxBacklog(ctx context.Context) (int, error) {
	var n int
	err := e.read().QueryRowContext(ctx, q.Get("count_outbox_backlog")).Scan(&n)
	return n, wrap("counting the outbox", err)
}

func (e executor) ReadyByTool(ctx context.Context) ([]store.ToolCount, error) {
	rows, err := e.read().QueryContext(ctx, q.Get("ready_by_tool"))
	return collect("counting ready executions", func(row scanner) (store.ToolCount, error) {
		var c store.ToolCount
		return scanInto("counting ready executions", row, &c, &c.Tool, &c.Count)
	}, rows, err)
}
