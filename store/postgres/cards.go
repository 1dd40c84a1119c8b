package postgres

import (
	"context"

	"github.com/countersign/countersign/store"
)

func (e executor) CardFor(ctx context.Context, requestID string, round int, surface string) (store.Card, error) {
	rows, err := e.db.Query(ctx, q.Get("card_for"), requestID, round, surface)
	return one[store.Card]("reading card", rows, err)
}

func (e executor) RecordCard(ctx context.Context, c store.Card) (store.Card, error) {
	rows, err := e.db.Query(ctx, q.Get("record_card"),
		c.RequestID, c.Round, c.Surface, c.Ref, c.RenderedState, c.Settled)
	return one[store.Card]("recording card", rows, err)
}

func (e executor) MarkCardRendered(ctx context.Context, p store.MarkCardRenderedParams) error {
	_, err := e.db.Exec(ctx, q.Get("mark_card_rendered"), p.RequestID, p.Round, p.State, p.Settled, p.Surface)
	return wrap("recording card render", err)
}

func (e executor) CardState(ctx context.Context, requestID string, round int) (string, error) {
	var state *string
	if err := e.db.QueryRow(ctx, q.Get("card_state"), requestID, round).Scan(&state); err != nil {
		return "", wrap("reading card state", err)
	}
	if state == nil {
		return "", store.ErrNotFound
	}
	return *state, nil
}

func (e executor) EnqueueStaleCards(ctx context.Context, p store.StaleCardsParams) (int, error) {
	data, err := encode(p.Data)
	if err != nil {
		return 0, wrap("encoding outbox data", err)
	}
	tag, err := e.db.Exec(ctx, q.Get("enqueue_stale_cards"), p.Limit, p.RetryAfter.Microseconds(),
		p.UnpostedAfter.Microseconds(), string(p.UpdateKind), string(p.PostKind), data)
	if err != nil {
		return 0, wrap("queueing stale cards", err)
	}
	return int(tag.RowsAffected()), nil
}
