package embedded

import (
	"context"
	"database/sql"
	"errors"

	"github.com/countersign/countersign/store"
)

func scanCard(row scanner) (store.Card, error) {
	var c store.Card
	if err := row.Scan(&c.RequestID, &c.Round, &c.Channel, &c.TS, &c.RenderedState, &c.Settled); err != nil {
		return store.Card{}, wrap("reading card", err)
	}
	return c, nil
}

func (e executor) CardFor(ctx context.Context, requestID string, round int) (store.Card, error) {
	return scanCard(e.read().QueryRowContext(ctx, q.Get("card_for"),
		canonicalID(requestID), round))
}

// RecordCard inserts the card unless the round has one, and points the
// request at it; the card that stands is returned.
func (e executor) RecordCard(ctx context.Context, c store.Card) (stood store.Card, err error) {
	id := canonicalID(c.RequestID)
	err = e.write(ctx, func(tx *writeTx) error {
		now := micros(tx.clock(nil))
		stood, err = scanCard(tx.QueryRowContext(ctx, q.Get("insert_card"), id, c.Round, c.Channel, c.TS, c.RenderedState, c.Settled, now))
		if errors.Is(err, store.ErrNotFound) {
			stood, err = scanCard(tx.QueryRowContext(ctx, q.Get("card_for"), id, c.Round))
			return err
		}
		if err != nil {
			return wrap("recording card", err)
		}
		_, err = tx.ExecContext(ctx, q.Get("point_request_at_card"),
			stood.Channel, stood.TS, id, stood.Round)
		return wrap("recording card", err)
	})
	return stood, err
}

func (e executor) MarkCardRendered(ctx context.Context, p store.MarkCardRenderedParams) error {
	return e.exec(ctx, "recording card render", q.Get("mark_card_rendered"), p.State, p.Settled, micros(clock(nil)),
		canonicalID(p.RequestID), p.Round)
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

func (e executor) EnqueueStaleCards(ctx context.Context, p store.StaleCardsParams) (queued int, err error) {
	data, err := encodeData(p.Data)
	if err != nil {
		return 0, err
	}
	err = e.write(ctx, func(tx *writeTx) error {
		res, err := tx.ExecContext(ctx, q.Get("enqueue_stale_cards"),
			micros(tx.clock(nil)), p.Limit, p.RetryAfter.Microseconds(), p.UnpostedAfter.Microseconds(),
			string(p.UpdateKind), string(p.PostKind), data)
		if err != nil {
			return wrap("queueing stale cards", err)
		}
		n, err := res.RowsAffected()
		queued = int(n)
		return err
	})
	return queued, err
}
