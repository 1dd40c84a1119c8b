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
		rows, err := tx.QueryContext(ctx, `
UPDATE outbox SET next_attempt_at = ?1 + ?2, attempts = attempts + 1
WHERE id IN (SELECT id FROM outbox WHERE state = 'pending' AND next_attempt_at <= ?1 ORDER BY next_attempt_at, id LIMIT ?3)
RETURNING id, kind, request_id, round, data, attempts, coalesce(last_error, ''), created_at`,
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
	return e.exec(ctx, "marking outbox delivered", `UPDATE outbox SET state = 'delivered', delivered_at = ?2,
	last_error = nullif(?3, '') WHERE id = ?1 AND state = 'pending'`, id, micros(clock(nil)), note)
}

func (e executor) MarkOutboxFailed(ctx context.Context, id int64, reason string) error {
	return e.exec(ctx, "marking outbox failed", `UPDATE outbox SET state = 'failed', last_error = ?2
	WHERE id = ?1 AND state = 'pending'`, id, reason)
}

func (e executor) RetryOutbox(ctx context.Context, id int64, delay time.Duration, reason string, attempted bool) error {
	inc := -1
	if attempted {
		inc = 0
	}
	return e.exec(ctx, "rescheduling outbox", `UPDATE outbox SET next_attempt_at = ?2,
	attempts = max(attempts + ?3, 0),
	last_error = CASE WHEN ?3 < 0 THEN last_error ELSE nullif(?4, '') END WHERE id = ?1 AND state = 'pending'`,
		id, micros(clock(nil).Add(delay)), inc, reason)
}

func (e executor) PostPending(ctx context.Context, requestID string, round int) (bool, error) {
	var pending bool
	err := e.read().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = ? AND round = ? AND kind = 'post_card' AND state = 'pending')`, canonicalID(requestID), round).Scan(&pending)
	return pending, wrap("reading outbox", err)
}

func (e executor) OtherPostRows(ctx context.Context, row store.OutboxRow) (bool, error) {
	var others bool
	err := e.read().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = ? AND round = ? AND kind = 'post_card' AND id <> ?)`, canonicalID(row.RequestID), row.Round, row.ID).Scan(&others)
	return others, wrap("reading outbox", err)
}

// cardState is the SQL expression of what a round's card must show, as
// PostgreSQL's countersign_card_state computes it: superseded for an old
// round, pending/rejected/expired/cancelled, or approved/<execution
// state>/<attempts>. req and rnd are SQL expressions; it is NULL when the
// request does not exist.
func cardState(req, rnd string) string {
	return `(SELECT CASE
	WHEN r.round > ` + rnd + ` THEN 'superseded'
	WHEN r.status = 'approved' THEN 'approved/' || coalesce((SELECT e.state || '/' || e.attempts
		FROM decisions d JOIN executions e ON e.decision_id = d.id
		WHERE d.request_id = r.id AND d.round = ` + rnd + `), 'none')
	ELSE r.status
END FROM requests r WHERE r.id = ` + req + `)`
}

const cardColumns = `request_id, round, channel, ts, rendered_state, settled`

func scanCard(row scanner) (store.Card, error) {
	var c store.Card
	if err := row.Scan(&c.RequestID, &c.Round, &c.Channel, &c.TS, &c.RenderedState, &c.Settled); err != nil {
		return store.Card{}, translate(err)
	}
	return c, nil
}

func (e executor) CardFor(ctx context.Context, requestID string, round int) (store.Card, error) {
	return scanCard(e.read().QueryRowContext(ctx, `SELECT `+cardColumns+` FROM cards WHERE request_id = ? AND round = ?`,
		canonicalID(requestID), round))
}

// RecordCard inserts the card unless the round has one, and points the
// request at it; the card that stands is returned.
func (e executor) RecordCard(ctx context.Context, c store.Card) (stood store.Card, err error) {
	id := canonicalID(c.RequestID)
	err = e.write(ctx, func(tx *writeTx) error {
		now := micros(tx.clock(nil))
		stood, err = scanCard(tx.QueryRowContext(ctx, `
INSERT INTO cards (request_id, round, channel, ts, rendered_state, settled, posted_at, rendered_at)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7)
ON CONFLICT (request_id, round) DO NOTHING
RETURNING `+cardColumns, id, c.Round, c.Channel, c.TS, c.RenderedState, c.Settled, now))
		if errors.Is(err, store.ErrNotFound) {
			stood, err = scanCard(tx.QueryRowContext(ctx, `SELECT `+cardColumns+` FROM cards WHERE request_id = ? AND round = ?`, id, c.Round))
			return err
		}
		if err != nil {
			return wrap("recording card", err)
		}
		_, err = tx.ExecContext(ctx, `UPDATE requests SET card_channel = ?, card_ts = ? WHERE id = ? AND round = ?`,
			stood.Channel, stood.TS, id, stood.Round)
		return wrap("recording card", err)
	})
	return stood, err
}

func (e executor) MarkCardRendered(ctx context.Context, requestID string, round int, state string, settled bool) error {
	return e.exec(ctx, "recording card render", `UPDATE cards SET rendered_state = ?, settled = ?, rendered_at = ?
WHERE request_id = ? AND round = ?`, state, settled, micros(clock(nil)), canonicalID(requestID), round)
}

func (e executor) CardState(ctx context.Context, requestID string, round int) (string, error) {
	var state sql.NullString
	if err := e.read().QueryRowContext(ctx, `SELECT `+cardState("?1", "?2"), canonicalID(requestID), round).Scan(&state); err != nil {
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
		res, err := tx.ExecContext(ctx, `
WITH stale AS (
	SELECT c.request_id, c.round FROM cards c
	WHERE NOT c.settled
		AND c.rendered_state IS NOT `+cardState("c.request_id", "c.round")+`
		AND NOT EXISTS (SELECT 1 FROM outbox o
			WHERE o.request_id = c.request_id AND o.round = c.round AND o.kind = 'update_card'
				AND (o.state = 'pending' OR (o.state = 'failed' AND o.created_at > ?1 - ?3)))
	ORDER BY c.rendered_at
	LIMIT ?2
), unposted AS (
	SELECT r.id AS request_id, r.round FROM requests r
	WHERE r.status = 'pending' AND r.updated_at < ?1 - ?4
		AND NOT EXISTS (SELECT 1 FROM cards c WHERE c.request_id = r.id AND c.round = r.round)
		AND NOT EXISTS (SELECT 1 FROM outbox o
			WHERE o.request_id = r.id AND o.round = r.round AND o.kind = 'post_card'
				AND (o.state = 'pending' OR (o.state = 'failed' AND o.created_at > ?1 - ?3)))
	ORDER BY r.expires_at
	LIMIT ?2
)
INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at)
SELECT 'update_card', request_id, round, '{"reason":"converge"}', ?1, ?1 FROM stale
UNION ALL
SELECT 'post_card', request_id, round, '{"reason":"converge"}', ?1, ?1 FROM unposted`,
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
	return e.requests(ctx, `SELECT `+requestColumns+` FROM requests
WHERE key >= ? AND key < ? ORDER BY key LIMIT ?`, prefix, prefix+"\x7f", limit)
}

// RequestsByEffectString reads the effect_strings table.
func (e executor) RequestsByEffectString(ctx context.Context, value string, limit int) ([]store.Request, error) {
	return e.requests(ctx, `SELECT `+requestColumns+` FROM requests
WHERE id IN (SELECT request_id FROM effect_strings WHERE value = ?) ORDER BY created_at DESC LIMIT ?`, value, limit)
}

func (e executor) PendingRequests(ctx context.Context, limit int) ([]store.Request, error) {
	return e.requests(ctx, `SELECT `+requestColumns+` FROM requests
WHERE status = 'pending' ORDER BY expires_at LIMIT ?`, limit)
}

func (e executor) RecentlyDecided(ctx context.Context, limit int) ([]store.Request, error) {
	return e.requests(ctx, `SELECT `+requestColumns+` FROM requests
WHERE status <> 'pending' ORDER BY updated_at DESC LIMIT ?`, limit)
}

func (e executor) requests(ctx context.Context, query string, args ...any) ([]store.Request, error) {
	rows, err := e.read().QueryContext(ctx, query, args...)
	if err != nil {
		return nil, wrap("reading requests", err)
	}
	reqs, err := collect(rows, scanRequest)
	return reqs, wrap("reading requests", err)
}
