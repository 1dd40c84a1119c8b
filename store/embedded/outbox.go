package embedded

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) ClaimOutbox(ctx context.Context, limit int, lease time.Duration) (claimed []store.OutboxRow, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		rows, err := tx.QueryContext(ctx, q.Get("claim_outbox"),
			micros(tx.clock(nil)), lease.Microseconds(), limit)
		if err != nil {
			return wrap("claiming outbox", err)
		}
		claimed, err = collect(rows, func(row scanner) (store.OutboxRow, error) {
			var (
				o       store.OutboxRow
				raw     string
				created int64
			)
			if err := row.Scan(&o.ID, &o.Kind, &o.RequestID, &o.Round, &raw, &o.Attempts, &o.LastError, &created); err != nil {
				return store.OutboxRow{}, err
			}
			o.CreatedAt = fromMicros(created)
			var err error
			o.Data, err = decodeData(raw)
			return o, err
		})
		return wrap("claiming outbox", err)
	})
	return claimed, err
}

func (e executor) MarkOutboxDelivered(ctx context.Context, id int64, note string) error {
	return e.exec(ctx, "marking outbox delivered", q.Get("mark_outbox_delivered"), id, micros(clock(nil)), note)
}

func (e executor) MarkOutboxFailed(ctx context.Context, id int64, reason string) error {
	return e.exec(ctx, "marking outbox failed", q.Get("mark_outbox_failed"), id, reason)
}

func (e executor) RetryOutbox(ctx context.Context, id int64, delay time.Duration, reason string, attempted bool) error {
	inc := -1
	if attempted {
		inc = 0
	}
	return e.exec(ctx, "rescheduling outbox", q.Get("retry_outbox"),
		id, micros(clock(nil).Add(delay)), inc, reason)
}

func (e executor) PostPending(ctx context.Context, requestID string, round int) (bool, error) {
	var pending bool
	err := e.read().QueryRowContext(ctx, q.Get("post_pending"), canonicalID(requestID), round).Scan(&pending)
	return pending, wrap("reading outbox", err)
}

func (e executor) OtherPostRows(ctx context.Context, row store.OutboxRow) (bool, error) {
	var others bool
	err := e.read().QueryRowContext(ctx, q.Get("other_post_rows"), canonicalID(row.RequestID), row.Round, row.ID).Scan(&others)
	return others, wrap("reading outbox", err)
}

func scanCard(row scanner) (store.Card, error) {
	var c store.Card
	if err := row.Scan(&c.RequestID, &c.Round, &c.Channel, &c.TS, &c.RenderedState, &c.Settled); err != nil {
		return store.Card{}, translate(err)
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

func (e executor) MarkCardRendered(ctx context.Context, requestID string, round int, state string, settled bool) error {
	return e.exec(ctx, "recording card render", q.Get("mark_card_rendered"), state, settled, micros(clock(nil)), canonicalID(requestID), round)
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

// convergeAfter is how long a failed delivery keeps the sweep from queueing
// the same card again, and unpostedAfter how long a pending round may go
// without a card before the sweep posts one (both as in PostgreSQL).
const (
	convergeAfter = 10 * time.Minute
	unpostedAfter = time.Minute
)

func (e executor) EnqueueStaleCards(ctx context.Context, limit int) (queued int, err error) {
	err = e.write(ctx, func(tx *writeTx) error {
		res, err := tx.ExecContext(ctx, q.Get("enqueue_stale_cards"),
			micros(tx.clock(nil)), limit, convergeAfter.Microseconds(), unpostedAfter.Microseconds())
		if err != nil {
			return wrap("queueing stale cards", err)
		}
		n, err := res.RowsAffected()
		queued = int(n)
		return err
	})
	return queued, err
}

// RequestsByKeyPrefix is a range scan on the key's unique index (BINARY
// collation is byte order). Keys are printable ASCII, so every key with the
// prefix sorts before prefix+DEL.
func (e executor) RequestsByKeyPrefix(ctx context.Context, prefix string, limit int) ([]store.Request, error) {
	return e.requests(ctx, q.Get("requests_by_key_prefix"), prefix, prefix+"\x7f", limit)
}

// RequestsByEffectString reads the effect_strings table.
func (e executor) RequestsByEffectString(ctx context.Context, value string, limit int) ([]store.Request, error) {
	return e.requests(ctx, q.Get("requests_by_effect_string"), value, limit)
}

func (e executor) PendingRequests(ctx context.Context, limit int) ([]store.Request, error) {
	return e.requests(ctx, q.Get("pending_requests"), limit)
}

func (e executor) RecentlyDecided(ctx context.Context, limit int) ([]store.Request, error) {
	return e.requests(ctx, q.Get("recently_decided"), limit)
}

func (e executor) requests(ctx context.Context, query string, args ...any) ([]store.Request, error) {
	rows, err := e.read().QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap("reading requests", err)
	}
	reqs, err := collect(rows, scanRequest)
	return reqs, wrap("reading requests", err)
}
