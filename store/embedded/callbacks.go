package embedded

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) InsertCallbacks(ctx context.Context, rows []store.NewCallback) error {
	return e.write(ctx, func(tx *writeTx) error {
		for _, c := range rows {
			at := tx.orClock(c.At)
			if _, err := tx.ExecContext(ctx, q.Get("insert_callback"), newID(), canonicalID(c.RequestID), c.Agent, string(c.Event),
				micros(at), micros(at.Add(store.CallbackRetryWindow))); err != nil {
				return wrap("queueing callbacks", err)
			}
		}
		return nil
	})
}

func (e executor) ClaimCallbacks(ctx context.Context, limit int, lease time.Duration) (claimed []store.Callback, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		rows, err := tx.QueryContext(ctx, q.Get("claim_callbacks"), micros(tx.clock(nil)), lease.Microseconds(), limit)
		claimed, err = collect("claiming callbacks", scanCallback, rows, err)
		return err
	})
	return claimed, err
}

func (e executor) MarkCallbackDelivered(ctx context.Context, claimed store.Callback, status int) error {
	return e.exec(ctx, "marking callback delivered", q.Get("mark_callback_delivered"), claimed.ID, status, micros(clock(nil)),
		micros(claimed.NextAttemptAt))
}

func (e executor) RetryCallback(ctx context.Context, p store.RetryCallbackParams) (state store.CallbackState, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		err := tx.QueryRowContext(ctx, q.Get("retry_callback"), p.Claimed.ID, p.Delay.Microseconds(), p.Status, p.Reason,
			micros(tx.clock(nil)), micros(p.Claimed.NextAttemptAt)).Scan(&state)
		if errors.Is(err, sql.ErrNoRows) {
			return store.ErrNotFound
		}
		return wrap("rescheduling callback", err)
	})
	return state, err
}

func (e executor) LatestCallback(ctx context.Context, requestID string) (store.Callback, error) {
	return scanCallback(e.read().QueryRowContext(ctx, q.Get("latest_callback"), canonicalID(requestID)))
}

func (e executor) RedriveCallback(ctx context.Context, requestID string, window time.Duration) (cb store.Callback, ok bool, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		cb, err = scanCallback(tx.QueryRowContext(ctx, q.Get("redrive_callback"), canonicalID(requestID),
			micros(tx.clock(nil)), window.Microseconds()))
		ok, err = found("redriving callback", err)
		return err
	})
	return cb, ok, err
}

func (e executor) CountCallbackBacklog(ctx context.Context) (int, error) {
	var n int
	err := e.read().QueryRowContext(ctx, q.Get("count_callback_backlog")).Scan(&n)
	return n, wrap("counting callbacks", err)
}

// scanCallback scans {{callback_columns}} (queries.sql).
func scanCallback(row scanner) (store.Callback, error) {
	var (
		c                     store.Callback
		next, giveUp, created int64
		status                sql.NullInt64
	)
	if err := row.Scan(&c.ID, &c.DeliveryID, &c.RequestID, &c.Agent, &c.Event, &c.State, &c.Attempts,
		&next, &giveUp, &status, &c.LastError, &created); err != nil {
		return store.Callback{}, wrap("reading callback", err)
	}
	c.NextAttemptAt, c.GiveUpAt, c.CreatedAt = fromMicros(next), fromMicros(giveUp), fromMicros(created)
	if status.Valid {
		s := int(status.Int64)
		c.LastStatus = &s
	}
	return c, nil
}
