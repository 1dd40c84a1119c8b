package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// ResolveParams is a human's answer to an execution in needs_review.
type ResolveParams struct {
	RequestID   string
	ExecutionID int64
	To          ExecState // succeeded, failed or ready
	Code        string    // recorded as last_code; empty keeps the row's
	Action      string
	By          string
	Now         *time.Time
}

// ResolveTx moves an execution out of needs_review with its audit event and
// card update. A move back to ready (a resend under the same key) raises the
// attempt cap to allow at least one more attempt. resolved is false when the
// execution exists but is not in needs_review; a missing execution is
// ErrNotFound.
func ResolveTx(ctx context.Context, tx pgx.Tx, p ResolveParams) (resolved bool, err error) {
	if !IsUUID(p.RequestID) {
		return false, ErrNotFound
	}
	var (
		attempts, round int
		at              time.Time
	)
	err = tx.QueryRow(ctx, `
UPDATE executions e SET state = $3,
	last_code = coalesce(nullif($4, ''), e.last_code),
	max_attempts = CASE WHEN $3 = 'ready' THEN greatest(e.max_attempts, e.attempts + 1) ELSE e.max_attempts END,
	next_attempt_at = coalesce($5::timestamptz, now()),
	updated_at = coalesce($5::timestamptz, now())
FROM decisions d
WHERE e.id = $1 AND e.request_id = $2 AND e.state = 'needs_review' AND d.id = e.decision_id
RETURNING e.attempts, d.round, e.updated_at`,
		p.ExecutionID, p.RequestID, string(p.To), p.Code, p.Now).Scan(&attempts, &round, &at)
	if err != nil {
		if !errors.Is(translate(err), ErrNotFound) {
			return false, fmt.Errorf("resolving execution: %w", err)
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM executions WHERE id = $1 AND request_id = $2)`,
			p.ExecutionID, p.RequestID).Scan(&exists); err != nil {
			return false, fmt.Errorf("resolving execution: %w", err)
		}
		if !exists {
			return false, ErrNotFound
		}
		return false, nil
	}
	if err := AppendEventTx(ctx, tx, Event{
		RequestID: p.RequestID, At: at, Actor: p.By, Kind: "resolved",
		Data: map[string]any{"execution_id": p.ExecutionID, "action": p.Action, "attempt": attempts, "state": p.To},
	}); err != nil {
		return false, err
	}
	if err := EnqueueOutboxTx(ctx, tx, OutboxUpdateCard, p.RequestID, round, nil, at); err != nil {
		return false, err
	}
	return true, nil
}
