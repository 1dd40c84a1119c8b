package embedded

import (
	"context"
	"database/sql"
	"errors"

	"github.com/countersign/countersign/store"
)

func (e executor) CardFor(ctx context.Context, requestID string, round int, surface string) (store.Card, error) {
	return scanCard(e.read().QueryRowContext(ctx, q.Get("card_for"), canonicalID(requestID), round, surface))
}

// RecordCard inserts the card unless the round has one on its surface, and
// points the request at it; the card that stands is returned.
func (e executor) RecordCard(ctx context.Context, c store.Card) (store.Card, error) {
	id := canonicalID(c.RequestID)
	stood, err := scanCard(e.tx.QueryRowContext(ctx, q.Get("insert_card"), id, c.Round, c.Surface, c.Ref, c.RenderedState,
		c.Settled, micros(e.tx.now)))
	if errors.Is(err, store.ErrNotFound) {
		return scanCard(e.tx.QueryRowContext(ctx, q.Get("card_for"), id, c.Round, c.Surface))
	}
	if err != nil {
		return store.Card{}, wrap("recording card", err)
	}
	return stood, e.tx.exec(ctx, "recording card", q.Get("point_request_at_card"), stood.Surface, stood.Ref, id, stood.Round)
}

func (e executor) MarkCardRendered(ctx context.Context, p store.MarkCardRenderedParams) error {
	return e.tx.exec(ctx, "recording card render", q.Get("mark_card_rendered"), p.State, p.Settled, micros(e.tx.now),
		canonicalID(p.RequestID), p.Round, p.Surface)
}

func (e executor) CardState(ctx context.Context, requestID string, round int) (string, error) {
	var state sql.NullString
	if err := e.read().QueryRowContext(ctx, q.Get("card_state"), canonicalID(requestID), round).Scan(&state); err != nil {
		return "", wrap("reading card state", err)
	}
	if !state.Valid {
		return "", store.ErrNotFound
	}
	return state.String, nil
}

func (e executor) EnqueueStaleCards(ctx context.Context, p store.StaleCardsParams) (int, error) {
	res, err := e.tx.ExecContext(ctx, q.Get("enqueue_stale_cards"), micros(e.tx.now), p.Limit, p.RetryAfter.Microseconds(),
		p.UnpostedAfter.Microseconds(), string(p.UpdateKind), string(p.PostKind), jsonData(p.Data))
	if err != nil {
		return 0, wrap("queueing stale cards", err)
	}
	n, err := res.RowsAffected()
	return int(n), wrap("queueing stale cards", err)
}
