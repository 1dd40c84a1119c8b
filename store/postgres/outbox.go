package postgres

import (
	"context"
	"time"

	"github.com/countersign/countersign/store"
)

func (e executor) ClaimOutbox(ctx context.Context, limit int, lease time.Duration) ([]store.OutboxRow, error) {
	rows, err := e.db.Query(ctx, `
WITH due AS (
	SELECT id FROM outbox
	WHERE state = 'pending' AND next_attempt_at <= now()
	ORDER BY next_attempt_at, id
	LIMIT $1
	FOR UPDATE SKIP LOCKED
)
UPDATE outbox o SET next_attempt_at = now() + $2::bigint * interval '1 microsecond', attempts = o.attempts + 1
FROM due WHERE o.id = due.id
RETURNING o.id, o.kind, o.request_id::text AS request_id, o.round, o.data, o.attempts,
	coalesce(o.last_error, '') AS last_error, o.created_at`,
		limit, lease.Microseconds())
	return collect[store.OutboxRow]("claiming outbox", rows, err)
}

func (e executor) MarkOutboxDelivered(ctx context.Context, id int64, note string) error {
	_, err := e.db.Exec(ctx, `UPDATE outbox SET state = 'delivered', delivered_at = now(),
	last_error = nullif($2, '') WHERE id = $1 AND state = 'pending'`, id, note)
	return wrap("marking outbox delivered", err)
}

func (e executor) MarkOutboxFailed(ctx context.Context, id int64, reason string) error {
	_, err := e.db.Exec(ctx, `UPDATE outbox SET state = 'failed', last_error = $2
	WHERE id = $1 AND state = 'pending'`, id, reason)
	return wrap("marking outbox failed", err)
}

func (e executor) RetryOutbox(ctx context.Context, id int64, delay time.Duration, reason string, attempted bool) error {
	inc := -1
	if attempted {
		inc = 0
	}
	_, err := e.db.Exec(ctx, `UPDATE outbox SET next_attempt_at = now() + $2::bigint * interval '1 microsecond',
	attempts = greatest(attempts + $3, 0),
	last_error = CASE WHEN $3 < 0 THEN last_error ELSE nullif($4, '') END WHERE id = $1 AND state = 'pending'`,
		id, delay.Microseconds(), inc, reason)
	return wrap("rescheduling outbox", err)
}

func (e executor) PostPending(ctx context.Context, requestID string, round int) (bool, error) {
	var pending bool
	err := e.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = $1 AND round = $2 AND kind = 'post_card' AND state = 'pending')`, requestID, round).Scan(&pending)
	return pending, wrap("reading outbox", err)
}

func (e executor) OtherPostRows(ctx context.Context, row store.OutboxRow) (bool, error) {
	var others bool
	err := e.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = $1 AND round = $2 AND kind = 'post_card' AND id <> $3)`, row.RequestID, row.Round, row.ID).Scan(&others)
	return others, wrap("reading outbox", err)
}

const cardColumns = `request_id::text AS request_id, round, channel, ts, rendered_state, settled`

func (e executor) CardFor(ctx context.Context, requestID string, round int) (store.Card, error) {
	rows, err := e.db.Query(ctx, `SELECT `+cardColumns+` FROM cards WHERE request_id = $1 AND round = $2`, requestID, round)
	return one[store.Card]("reading card", rows, err)
}

func (e executor) RecordCard(ctx context.Context, c store.Card) (store.Card, error) {
	rows, err := e.db.Query(ctx, `
WITH ins AS (
	INSERT INTO cards (request_id, round, channel, ts, rendered_state, settled)
	VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (request_id, round) DO NOTHING
	RETURNING request_id, round, channel, ts, rendered_state, settled
), req AS (
	UPDATE requests SET card_channel = ins.channel, card_ts = ins.ts
	FROM ins WHERE requests.id = ins.request_id AND requests.round = ins.round
)
SELECT `+cardColumns+` FROM ins
UNION ALL
SELECT request_id::text, round, channel, ts, rendered_state, settled FROM cards
WHERE request_id = $1 AND round = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
		c.RequestID, c.Round, c.Channel, c.TS, c.RenderedState, c.Settled)
	return one[store.Card]("recording card", rows, err)
}

func (e executor) MarkCardRendered(ctx context.Context, requestID string, round int, state string, settled bool) error {
	_, err := e.db.Exec(ctx, `UPDATE cards SET rendered_state = $3, settled = $4, rendered_at = now()
WHERE request_id = $1 AND round = $2`, requestID, round, state, settled)
	return wrap("recording card render", err)
}

func (e executor) CardState(ctx context.Context, requestID string, round int) (string, error) {
	var state *string
	if err := e.db.QueryRow(ctx, `SELECT countersign_card_state($1, $2)`, requestID, round).Scan(&state); err != nil {
		return "", wrap("reading card state", err)
	}
	if state == nil {
		return "", store.ErrNotFound
	}
	return *state, nil
}

func (e executor) EnqueueStaleCards(ctx context.Context, limit int) (int, error) {
	tag, err := e.db.Exec(ctx, `
WITH stale AS (
	SELECT c.request_id, c.round FROM cards c
	WHERE NOT c.settled
		AND c.rendered_state IS DISTINCT FROM countersign_card_state(c.request_id, c.round)
		AND NOT EXISTS (SELECT 1 FROM outbox o
			WHERE o.request_id = c.request_id AND o.round = c.round AND o.kind = 'update_card'
				AND (o.state = 'pending' OR (o.state = 'failed' AND o.created_at > now() - interval '10 minutes')))
	ORDER BY c.rendered_at
	LIMIT $1
), unposted AS (
	SELECT r.id AS request_id, r.round FROM requests r
	WHERE r.status = 'pending' AND r.updated_at < now() - interval '1 minute'
		AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.request_id = r.id AND c.round = r.round)
		AND NOT EXISTS (SELECT 1 FROM outbox o
			WHERE o.request_id = r.id AND o.round = r.round AND o.kind = 'post_card'
				AND (o.state = 'pending' OR (o.state = 'failed' AND o.created_at > now() - interval '10 minutes')))
	ORDER BY r.expires_at
	LIMIT $1
)
INSERT INTO outbox (kind, request_id, round, data)
SELECT 'update_card', request_id, round, '{"reason":"converge"}'::jsonb FROM stale
UNION ALL
SELECT 'post_card', request_id, round, '{"reason":"converge"}'::jsonb FROM unposted`, limit)
	if err != nil {
		return 0, wrap("queueing stale cards", err)
	}
	return int(tag.RowsAffected()), nil
}

// RequestsByKeyPrefix is a range scan on the key's unique index (byte
// order, C collation). Keys are printable ASCII, so every key with the
// prefix sorts before prefix+DEL.
func (e executor) RequestsByKeyPrefix(ctx context.Context, prefix string, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, `SELECT `+requestColumns+` FROM requests
WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3`, prefix, prefix+"\x7f", limit)
	return collect[store.Request]("reading requests", rows, err)
}

// RequestsByEffectString reads the GIN index on effect_strings.
func (e executor) RequestsByEffectString(ctx context.Context, value string, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, `SELECT `+requestColumns+` FROM requests
WHERE effect_strings @> ARRAY[$1::text] ORDER BY created_at DESC LIMIT $2`, value, limit)
	return collect[store.Request]("reading requests", rows, err)
}

func (e executor) PendingRequests(ctx context.Context, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, `SELECT `+requestColumns+` FROM requests
WHERE status = 'pending' ORDER BY expires_at LIMIT $1`, limit)
	return collect[store.Request]("reading requests", rows, err)
}

func (e executor) RecentlyDecided(ctx context.Context, limit int) ([]store.Request, error) {
	rows, err := e.db.Query(ctx, `SELECT `+requestColumns+` FROM requests
WHERE status <> 'pending' ORDER BY updated_at DESC LIMIT $1`, limit)
	return collect[store.Request]("reading requests", rows, err)
}
