package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/countersign/countersign/store"
)

// PartsOf sends its four statements as one batch: one round trip for a
// page, where reading each request's parts alone was four.
func (e executor) PartsOf(ctx context.Context, reqs []store.Request) ([]store.RequestParts, error) {
	parts := make([]store.RequestParts, len(reqs))
	if len(reqs) == 0 {
		return parts, nil
	}
	ids := make([]string, len(reqs))
	for i, r := range reqs {
		ids[i] = r.ID
	}
	var (
		votes      = map[string][]store.Vote{}
		decisions  = map[string]*store.Decision{}
		executions = map[string]*store.Execution{}
		callbacks  = map[string]*store.Callback{}
	)
	var b pgx.Batch
	queue(&b, "votes_of_requests", ids, func(v store.Vote) { votes[v.RequestID] = append(votes[v.RequestID], v) })
	queue(&b, "latest_decisions_of_requests", ids, func(d store.Decision) { decisions[d.RequestID] = &d })
	queue(&b, "latest_executions_of_requests", ids, func(x store.Execution) { executions[x.RequestID] = &x })
	queue(&b, "latest_callbacks_of_requests", ids, func(c store.Callback) { callbacks[c.RequestID] = &c })
	if err := e.db.SendBatch(ctx, &b).Close(); err != nil {
		return nil, wrap("reading representations", err)
	}
	for i, r := range reqs {
		for _, v := range votes[r.ID] {
			if v.Round == r.Round {
				parts[i].Votes = append(parts[i].Votes, v)
			}
		}
		parts[i].Decision, parts[i].Execution, parts[i].Callback = decisions[r.ID], executions[r.ID], callbacks[r.ID]
	}
	return parts, nil
}

// HistoryOf sends its three statements as one batch.
func (e executor) HistoryOf(ctx context.Context, requestID string) (store.History, error) {
	var h store.History
	var b pgx.Batch
	queue(&b, "latest_decision", requestID, func(d store.Decision) { h.Decision = &d })
	queue(&b, "executions_for", requestID, func(x store.Execution) { h.Executions = append(h.Executions, x) })
	queue(&b, "events_for", requestID, func(ev store.Event) { h.Events = append(h.Events, ev) })
	err := wrap("reading a request's history", e.db.SendBatch(ctx, &b).Close())
	if errors.Is(err, store.ErrNotFound) {
		return store.History{}, nil // an id that names no request has none
	}
	return h, err
}

// queue adds the named statement to b, each of its rows read as a T and
// handed to each in order.
func queue[T any](b *pgx.Batch, name string, arg any, each func(T)) {
	b.Queue(q.Get(name), arg).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			v, err := pgx.RowToStructByName[T](rows)
			if err != nil {
				return err
			}
			each(v)
		}
		return rows.Err()
	})
}
