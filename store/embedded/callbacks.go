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
