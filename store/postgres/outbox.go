package postgres

import (
	"context"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) ClaimOutbox(ctx context.Context, limit int, lease time.Duration) ([]store.OutboxRow, error) {
	rows, err := e.db.Query(ctx, q.Get("claim_outbox"),
		limit, lease.Microseconds())
	return collect[store.OutboxRow]("claiming outbox", rows, err)
}

func (e executor) MarkOutboxDelivered(ctx context.Context, id int64, note string) error {
	_, err := e.db.Exec(ctx, q.Get("mark_outbox_delivered"), id, note)
	return wrap("marking outbox delivered", err)
}

func (e executor) MarkOutboxFailed(ctx context.Context, id int64, reason string) error {
	_, err := e.db.Exec(ctx, q.Get("mark_outbox_failed"), id, reason)
	return wrap("marking outbox failed", err)
}

func (e executor) RetryOutbox(ctx context.Context, id int64, delay time.Duration, reason string, attempted bool) error {
	inc := -1
	if attempted {
		inc = 0
	}
	_, err := e.db.Exec(ctx, q.Get("retry_outbox"),
		id, delay.Microseconds(), inc, reason)
	return wrap("rescheduling outbox", err)
}

func (e executor) PostPending(ctx context.Context, requestID string, round int) (bool, error) {
	var pending bool
	err := e.db.QueryRow(ctx, q.Get("post_pending"), requestID, round).Scan(&pending)
	return pending, wrap("reading outbox", err)
}

func (e executor) OtherPostRows(ctx context.Context, row store.OutboxRow) (bool, error) {
	var others bool
	err := e.db.QueryRow(ctx, q.Get("other_post_rows"), row.RequestID, row.Round, row.ID).Scan(&others)
	return others, wrap("reading outbox", err)
}

func (e executor) CardFor(ctx context.Context, requestID string, round int) (store.Card, error) {
	rows, err := e.db.Query(ctx, q.Get("card_for"), requestID, round)
	return one[store.Card]("reading card", rows, err)
}

func (e executor) RecordCard(ctx context.Context, c store.Card) (store.Card, error) {
	rows, err := e.db.Query(ctx, q.Get("record_card"),
		c.RequestID, c.Round, c.Channel, c.TS, c.RenderedState, c.Settled)
	return one[store.Card]("recording card", rows, err)
}

func (e executor) MarkCardRendered(ctx context.Context, requestID string, round int, state string, settled bool) error {
	_, err := e.db.Exec(ctx, q.Get("mark_card_rendered"), requestID, round, state, settled)
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

func (e executor) EnqueueStaleCards(ctx context.Context, limit int) (int, error) {
	tag, err := e.db.Exec(ctx, q.Get("enqueue_stale_cards"), limit)
	if err != nil {
		return 0, wrap("queueing stale cards", err)
	}
	return int(tag.RowsAffected()), nil
}

// RequestsByKeyPrefix is a range scan on the key's unique index (byte
// order, C collation). Keys are printable ASCII, so every key with the
// prefix sorts before prefix+DEL.
func (e executor) RequestsByKeyPrefix(ctx context.Context, prefix string, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, q.Get("requests_by_key_prefix"), prefix, prefix+"\x7f", limit)
	return collect[store.Request]("reading requests", rows, err)
}

// RequestsByEffectString reads the GIN index on effect_strings.
func (e executor) RequestsByEffectString(ctx context.Context, value string, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, q.Get("requests_by_effect_string"), value, limit)
	return collect[store.Request]("reading requests", rows, err)
}

func (e executor) PendingRequests(ctx context.Context, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, q.Get("pending_requests"), limit)
	return collect[store.Request]("reading requests", rows, err)
}

func (e executor) RecentlyDecided(ctx context.Context, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, q.Get("recently_decided"), limit)
	return collect[store.Request]("reading requests", rows, err)
}
