package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Card is the Slack message showing one round of a request.
type Card struct {
	RequestID     string `db:"request_id"`
	Round         int    `db:"round"`
	Channel       string `db:"channel"`
	TS            string `db:"ts"`
	RenderedState string `db:"rendered_state"`
	Settled       bool   `db:"settled"`
}

// CardFor returns the card of a request round, or ErrNotFound if it was
// never recorded.
func CardFor(ctx context.Context, db DBTX, requestID string, round int) (Card, error) {
	rows, err := db.Query(ctx, `SELECT request_id::text AS request_id, round, channel, ts, rendered_state, settled
FROM cards WHERE request_id = $1 AND round = $2`, requestID, round)
	if err != nil {
		return Card{}, fmt.Errorf("reading card: %w", err)
	}
	c, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Card])
	return c, translate(err)
}

// RecordCard stores where a round's card was posted and the state it showed,
// and, when it is the request's current round, the request's card_channel and
// card_ts. The first recorded card of a round wins; the card that stands is
// returned.
func RecordCard(ctx context.Context, db DBTX, c Card) (Card, error) {
	rows, err := db.Query(ctx, `
WITH ins AS (
	INSERT INTO cards (request_id, round, channel, ts, rendered_state, settled)
	VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (request_id, round) DO NOTHING
	RETURNING request_id, round, channel, ts, rendered_state, settled
), req AS (
	UPDATE requests SET card_channel = ins.channel, card_ts = ins.ts
	FROM ins WHERE requests.id = ins.request_id AND requests.round = ins.round
)
SELECT request_id::text AS request_id, round, channel, ts, rendered_state, settled FROM ins
UNION ALL
SELECT request_id::text, round, channel, ts, rendered_state, settled FROM cards
WHERE request_id = $1 AND round = $2 AND NOT EXISTS (SELECT 1 FROM ins)`,
		c.RequestID, c.Round, c.Channel, c.TS, c.RenderedState, c.Settled)
	if err != nil {
		return Card{}, fmt.Errorf("recording card: %w", err)
	}
	stood, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Card])
	if err != nil {
		return Card{}, fmt.Errorf("recording card: %w", translate(err))
	}
	return stood, nil
}

// MarkCardRendered records the state a card now shows.
func MarkCardRendered(ctx context.Context, db DBTX, requestID string, round int, state string, settled bool) error {
	_, err := db.Exec(ctx, `UPDATE cards SET rendered_state = $3, settled = $4, rendered_at = now()
WHERE request_id = $1 AND round = $2`, requestID, round, state, settled)
	if err != nil {
		return fmt.Errorf("recording card render: %w", err)
	}
	return nil
}

// CardState returns what a round's card must show (countersign_card_state):
// "superseded", "pending", "rejected", "expired", "cancelled", or
// "approved/<execution state>/<attempts>".
func CardState(ctx context.Context, db DBTX, requestID string, round int) (string, error) {
	var state *string
	if err := db.QueryRow(ctx, `SELECT countersign_card_state($1, $2)`, requestID, round).Scan(&state); err != nil {
		return "", fmt.Errorf("reading card state: %w", err)
	}
	if state == nil {
		return "", ErrNotFound
	}
	return *state, nil
}

// ExecutionForDecision returns the newest execution created by a decision.
func ExecutionForDecision(ctx context.Context, db DBTX, decisionID int64) (Execution, error) {
	rows, err := db.Query(ctx, `SELECT `+ExecutionColumns+` FROM executions WHERE decision_id = $1 ORDER BY id DESC LIMIT 1`, decisionID)
	if err != nil {
		return Execution{}, fmt.Errorf("reading execution: %w", err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByName[Execution])
	return e, translate(err)
}

// EnqueueStaleCards is the convergence sweep's write: it queues an update for
// up to limit unsettled cards whose shown state differs from the database's
// and that have no update waiting (nor one that failed in the last ten
// minutes), and a post for pending rounds whose card was never recorded and
// has no post waiting (nor one failed in the last ten minutes). It returns how
// many deliveries it queued. Safe on every replica at once: a duplicate
// delivery renders the same state.
func EnqueueStaleCards(ctx context.Context, db DBTX, limit int) (int, error) {
	tag, err := db.Exec(ctx, `
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
		return 0, fmt.Errorf("queueing stale cards: %w", err)
	}
	return int(tag.RowsAffected()), nil
}
