package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// SupersedeParams names a claimed execution that must not run as approved.
type SupersedeParams struct {
	ExecutionID int64
	Attempt     int
	Worker      string
	Code        string // approval_expired, precondition_failed
	Message     string
	// RequestTTL is how long the new round waits for a decision, at least.
	RequestTTL time.Duration
	Now        *time.Time
}

// SupersedeTx retires a claimed execution before anything was sent and sends
// its request back to review: the execution becomes superseded, the request
// pending in a new round, with the audit event, an update of the old round's
// card and a post of the new round's card. superseded is false when the claim
// is no longer the caller's or the request moved on.
func SupersedeTx(ctx context.Context, tx pgx.Tx, p SupersedeParams) (newRound int, superseded bool, err error) {
	var (
		requestID string
		oldRound  int
		at        time.Time
	)
	err = tx.QueryRow(ctx, `
UPDATE executions e SET state = 'superseded', claimed_by = NULL, claim_expires_at = NULL,
	last_code = $4, last_error = $5, updated_at = coalesce($6::timestamptz, now())
FROM decisions d
WHERE e.id = $1 AND e.state = 'claimed' AND e.attempts = $2 AND e.claimed_by = $3 AND d.id = e.decision_id
RETURNING e.request_id::text, d.round, e.updated_at`,
		p.ExecutionID, p.Attempt, p.Worker, p.Code, p.Message, p.Now).Scan(&requestID, &oldRound, &at)
	if err != nil {
		if err = translate(err); err == ErrNotFound {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("superseding execution: %w", err)
	}
	err = tx.QueryRow(ctx, `
UPDATE requests SET status = 'pending', round = round + 1, updated_at = $3::timestamptz,
	expires_at = greatest(expires_at, $3::timestamptz + $4::bigint * interval '1 microsecond')
WHERE id = $1 AND status = 'approved' AND round = $2
RETURNING round`, requestID, oldRound, at, p.RequestTTL.Microseconds()).Scan(&newRound)
	if err != nil {
		if err = translate(err); err == ErrNotFound {
			return 0, false, nil
		}
		return 0, false, fmt.Errorf("reopening request: %w", err)
	}
	if err := AppendEventTx(ctx, tx, Event{
		RequestID: requestID, At: at, Actor: "executor:" + p.Worker, Kind: "superseded",
		Data: map[string]any{"execution_id": p.ExecutionID, "attempt": p.Attempt, "code": p.Code,
			"message": p.Message, "round": oldRound, "new_round": newRound},
	}); err != nil {
		return 0, false, err
	}
	if err := EnqueueOutboxTx(ctx, tx, OutboxUpdateCard, requestID, oldRound, nil, at); err != nil {
		return 0, false, err
	}
	if err := EnqueueOutboxTx(ctx, tx, OutboxPostCard, requestID, newRound, nil, at); err != nil {
		return 0, false, err
	}
	return newRound, true, nil
}
