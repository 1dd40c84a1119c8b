package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
)

func (e executor) InsertCallbacks(ctx context.Context, rows []store.NewCallback) error {
	n := len(rows)
	ids, agents, events, ats := make([]string, n), make([]string, n), make([]string, n), make([]*time.Time, n)
	for i, c := range rows {
		ids[i], agents[i], events[i], ats[i] = c.RequestID, c.Agent, string(c.Event), orNow(c.At)
	}
	err := e.later(ctx, q.Get("insert_callbacks"), ids, agents, events, ats, store.CallbackRetryWindow.Microseconds())
	return wrap("queueing callbacks", err)
}

func (e executor) ClaimCallbacks(ctx context.Context, limit int, lease time.Duration) ([]store.Callback, error) {
	rows, err := e.db.Query(ctx, q.Get("claim_callbacks"), limit, lease.Microseconds())
	return collect[store.Callback]("claiming callbacks", rows, err)
}

func (e executor) MarkCallbackDelivered(ctx context.Context, claimed store.Callback, status int) error {
	_, err := e.db.Exec(ctx, q.Get("mark_callback_delivered"), claimed.ID, status, claimed.NextAttemptAt)
	return wrap("marking callback delivered", err)
}

func (e executor) RetryCallback(ctx context.Context, p store.RetryCallbackParams) (store.CallbackState, error) {
	var state store.CallbackState
	err := e.db.QueryRow(ctx, q.Get("retry_callback"), p.Claimed.ID, p.Delay.Microseconds(), p.Status, p.Reason,
		p.Claimed.NextAttemptAt).Scan(&state)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", store.ErrNotFound
	}
	return state, wrap("rescheduling callback", err)
}

func (e executor) RenewCallback(ctx context.Context, claimed store.Callback, lease time.Duration) (time.Time, error) {
	var at time.Time
	err := e.db.QueryRow(ctx, q.Get("renew_callback"), claimed.ID, claimed.NextAttemptAt, lease.Microseconds()).Scan(&at)
	if errors.Is(err, pgx.ErrNoRows) {
		return time.Time{}, store.ErrNotFound
	}
	return at, wrap("renewing a callback claim", err)
}

func (e executor) LatestCallback(ctx context.Context, requestID string) (store.Callback, error) {
	rows, err := e.db.Query(ctx, q.Get("latest_callback"), requestID)
	return one[store.Callback]("reading callback", rows, err)
}

func (e executor) RedriveCallback(ctx context.Context, requestID string, window time.Duration) (store.Callback, bool, error) {
	rows, err := e.db.Query(ctx, q.Get("redrive_callback"), requestID, window.Microseconds())
	return first(collect[store.Callback]("redriving callback", rows, err))
}

func (e executor) CountCallbackBacklog(ctx context.Context) (int, error) {
	var n int
	err := e.db.QueryRow(ctx, q.Get("count_callback_backlog")).Scan(&n)
	return n, wrap("counting callbacks", err)
}

func (e executor) CountOutboxBacklog(ctx context.Context) (int, error) {
	var n int
	err := e.db.QueryRow(ctx, q.Get("count_outbox_backlog")).Scan(&n)
	return n, wrap("counting the outbox", err)
}

func (e executor) ReadyByTool(ctx context.Context) ([]store.ToolCount, error) {
	rows, err := e.db.Query(ctx, q.Get("ready_by_tool"))
	return collect[store.ToolCount]("counting ready executions", rows, err)
}
