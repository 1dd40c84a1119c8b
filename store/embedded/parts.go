package embedded

import (
	"context"
	"errors"

	"github.com/countersign/countersign/store"
)

// PartsOf reads each request's parts one statement at a time: in process,
// a statement is not a round trip.
func (e executor) PartsOf(ctx context.Context, reqs []store.Request) ([]store.RequestParts, error) {
	parts := make([]store.RequestParts, len(reqs))
	for i, r := range reqs {
		var err error
		if parts[i].Votes, err = e.VotesFor(ctx, r.ID, r.Round); err != nil {
			return nil, err
		}
		if parts[i].Decision, err = present(e.LatestDecision(ctx, r.ID)); err != nil {
			return nil, err
		}
		if parts[i].Execution, err = present(e.LatestExecution(ctx, r.ID)); err != nil {
			return nil, err
		}
		if parts[i].Callback, err = present(e.LatestCallback(ctx, r.ID)); err != nil {
			return nil, err
		}
	}
	return parts, nil
}

// HistoryOf reads a request's history one statement at a time.
func (e executor) HistoryOf(ctx context.Context, requestID string) (h store.History, err error) {
	if h.Decision, err = present(e.LatestDecision(ctx, requestID)); err != nil {
		return store.History{}, err
	}
	if h.Executions, err = e.ExecutionsFor(ctx, requestID); err != nil {
		return store.History{}, err
	}
	if h.Events, err = e.EventsFor(ctx, requestID); err != nil {
		return store.History{}, err
	}
	return h, nil
}

// present is a read of one row as a pointer, nil when there is none.
func present[T any](v T, err error) (*T, error) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, err
	}
	return &v, nil
}
