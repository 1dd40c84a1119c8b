package store

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

// OutboxRow is one Slack delivery as the worker claims it.
type OutboxRow struct {
	ID        int64          `db:"id"`
	Kind      OutboxKind     `db:"kind"`
	RequestID string         `db:"request_id"`
	Round     int            `db:"round"`
	Data      map[string]any `db:"data"`
	Attempts  int            `db:"attempts"` // claims so far, this one included
	LastError string         `db:"last_error"`
	CreatedAt time.Time      `db:"created_at"`
}

// ClaimOutbox leases up to limit due deliveries, oldest first: their
// next_attempt_at moves lease into the future, so another worker skips them
// until the lease runs out (a crashed worker's rows come back by themselves).
// Each claim counts as an attempt, so a row claimed before is one whose
// earlier delivery may have landed. No transaction stays open while Slack is
// called.
func ClaimOutbox(ctx context.Context, db DBTX, limit int, lease time.Duration) ([]OutboxRow, error) {
	rows, err := db.Query(ctx, `
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
	if err != nil {
		return nil, fmt.Errorf("claiming outbox: %w", err)
	}
	claimed, err := pgx.CollectRows(rows, pgx.RowToStructByName[OutboxRow])
	if err != nil {
		return nil, fmt.Errorf("claiming outbox: %w", translate(err))
	}
	sort.Slice(claimed, func(i, j int) bool { return claimed[i].ID < claimed[j].ID })
	return claimed, nil
}

// MarkOutboxDelivered records a delivery that landed; note, if any, says why
// nothing had to be sent.
func MarkOutboxDelivered(ctx context.Context, db DBTX, id int64, note string) error {
	_, err := db.Exec(ctx, `UPDATE outbox SET state = 'delivered', delivered_at = now(),
	last_error = nullif($2, '') WHERE id = $1 AND state = 'pending'`, id, note)
	if err != nil {
		return fmt.Errorf("marking outbox %d delivered: %w", id, err)
	}
	return nil
}

// MarkOutboxFailed records a delivery that can never land, with its reason.
func MarkOutboxFailed(ctx context.Context, db DBTX, id int64, reason string) error {
	_, err := db.Exec(ctx, `UPDATE outbox SET state = 'failed', last_error = $2
	WHERE id = $1 AND state = 'pending'`, id, reason)
	if err != nil {
		return fmt.Errorf("marking outbox %d failed: %w", id, err)
	}
	return nil
}

// RetryOutbox puts a delivery back for another try after delay, on the
// database clock. attempted says whether Slack was called this time; a
// delivery only postponed (its channel is paused, its card not posted yet)
// gives its claim back and keeps the last error of a real attempt.
func RetryOutbox(ctx context.Context, db DBTX, id int64, delay time.Duration, reason string, attempted bool) error {
	inc := -1
	if attempted {
		inc = 0
	}
	_, err := db.Exec(ctx, `UPDATE outbox SET next_attempt_at = now() + $2::bigint * interval '1 microsecond',
	attempts = greatest(attempts + $3, 0),
	last_error = CASE WHEN $3 < 0 THEN last_error ELSE nullif($4, '') END WHERE id = $1 AND state = 'pending'`,
		id, delay.Microseconds(), inc, reason)
	if err != nil {
		return fmt.Errorf("rescheduling outbox %d: %w", id, err)
	}
	return nil
}

// PostPending reports whether a post of the request round's card is still
// waiting to be delivered.
func PostPending(ctx context.Context, db DBTX, requestID string, round int) (bool, error) {
	var pending bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = $1 AND round = $2 AND kind = 'post_card' AND state = 'pending')`, requestID, round).Scan(&pending)
	if err != nil {
		return false, fmt.Errorf("reading outbox: %w", err)
	}
	return pending, nil
}

// OtherPostRows reports whether the round of row's request has post rows
// besides row, in any state: an earlier one may have posted the card.
func OtherPostRows(ctx context.Context, db DBTX, row OutboxRow) (bool, error) {
	var others bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM outbox
	WHERE request_id = $1 AND round = $2 AND kind = 'post_card' AND id <> $3)`, row.RequestID, row.Round, row.ID).Scan(&others)
	if err != nil {
		return false, fmt.Errorf("reading outbox: %w", err)
	}
	return others, nil
}
