package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/countersign/countersign/store"
)

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

// CardFor returns the card of a request round, or ErrNotFound if it was
// never recorded.
func (s *Store) CardFor(ctx context.Context, requestID string, round int) (store.Card, error) {
	id, _ := canonicalID(requestID)
	return scanCard(s.reader.QueryRowContext(ctx, `SELECT `+cardColumns+` FROM cards WHERE request_id = ? AND round = ?`, id, round))
}

// RecordCard stores where a round's card was posted and the state it showed,
// and, when it is the request's current round, the request's card_channel and
// card_ts. The first recorded card of a round wins; the card that stands is
// returned.
func (s *Store) RecordCard(ctx context.Context, c store.Card) (stood store.Card, err error) {
	id, _ := canonicalID(c.RequestID)
	err = s.write(ctx, func(tx *writeTx) error {
		now := micros(clock(nil))
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
			return fmt.Errorf("recording card: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE requests SET card_channel = ?, card_ts = ? WHERE id = ? AND round = ?`,
			stood.Channel, stood.TS, id, stood.Round); err != nil {
			return fmt.Errorf("recording card: %w", err)
		}
		return nil
	})
	if err != nil {
		return store.Card{}, err
	}
	return stood, nil
}

// MarkCardRendered records the state a card now shows.
func (s *Store) MarkCardRendered(ctx context.Context, requestID string, round int, state string, settled bool) error {
	id, _ := canonicalID(requestID)
	return s.write(ctx, func(tx *writeTx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE cards SET rendered_state = ?, settled = ?, rendered_at = ?
WHERE request_id = ? AND round = ?`, state, settled, micros(clock(nil)), id, round); err != nil {
			return fmt.Errorf("recording card render: %w", err)
		}
		return nil
	})
}

// CardState returns what a round's card must show; see cardState.
func (s *Store) CardState(ctx context.Context, requestID string, round int) (string, error) {
	id, _ := canonicalID(requestID)
	var state sql.NullString
	if err := s.reader.QueryRowContext(ctx, `SELECT `+cardState("?1", "?2"), id, round).Scan(&state); err != nil {
		return "", fmt.Errorf("reading card state: %w", translate(err))
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
	convergeAfter = 10 * 60 * 1e6 // microseconds
	unpostedAfter = 60 * 1e6
)

// EnqueueStaleCards is the convergence sweep's write: it queues an update for
// up to limit unsettled cards whose shown state differs from the ledger's and
// that have no update waiting (nor one that failed in the last ten minutes),
// and a post for pending rounds whose card was never recorded and has no post
// waiting (nor one failed in the last ten minutes). It returns how many
// deliveries it queued.
func (s *Store) EnqueueStaleCards(ctx context.Context, limit int) (queued int, err error) {
	err = s.write(ctx, func(tx *writeTx) error {
		now := micros(clock(nil))
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
			now, limit, int64(convergeAfter), int64(unpostedAfter))
		if err != nil {
			return fmt.Errorf("queueing stale cards: %w", err)
		}
		n, err := res.RowsAffected()
		queued = int(n)
		return err
	})
	return queued, err
}
