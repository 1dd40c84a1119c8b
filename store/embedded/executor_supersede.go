package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/countersign/countersign/store"
)

// Supersede retires a claimed execution before anything was sent and sends
// its request back to review: the execution becomes superseded, the request
// pending in a new round, with the audit event, an update of the old round's
// card and a post of the new round's card. superseded is false when the claim
// is no longer the caller's or the request moved on; as in PostgreSQL, the
// execution stays retired in the second case.
func (s *Store) Supersede(ctx context.Context, p store.SupersedeParams) (newRound int, superseded bool, err error) {
	err = s.write(ctx, func(tx *writeTx) error {
		at := clock(p.Now)
		var (
			requestID  string
			decisionID int64
		)
		err := tx.QueryRowContext(ctx, `
UPDATE executions SET state = 'superseded', claimed_by = NULL, claim_expires_at = NULL,
	last_code = ?, last_error = ?, updated_at = ?
WHERE id = ? AND state = 'claimed' AND attempts = ? AND claimed_by = ?
RETURNING request_id, decision_id`,
			p.Code, p.Message, micros(at), p.ExecutionID, p.Attempt, p.Worker).Scan(&requestID, &decisionID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("superseding execution: %w", translate(err))
		}
		tx.executionMoved(requestID, string(store.ExecSuperseded))
		oldRound, err := decisionRound(ctx, tx, decisionID)
		if err != nil {
			return err
		}
		err = tx.QueryRowContext(ctx, `
UPDATE requests SET status = 'pending', round = round + 1, updated_at = ?1,
	expires_at = max(expires_at, ?1 + ?2)
WHERE id = ?3 AND status = 'approved' AND round = ?4
RETURNING round`, micros(at), p.RequestTTL.Microseconds(), requestID, oldRound).Scan(&newRound)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reopening request: %w", translate(err))
		}
		superseded = true
		if err := appendEvent(ctx, tx, requestID, at, "executor:"+p.Worker, "superseded", map[string]any{
			"execution_id": p.ExecutionID, "attempt": p.Attempt, "code": p.Code,
			"message": p.Message, "round": oldRound, "new_round": newRound,
		}); err != nil {
			return err
		}
		if err := enqueueOutbox(ctx, tx, store.OutboxUpdateCard, requestID, oldRound, nil, at); err != nil {
			return err
		}
		return enqueueOutbox(ctx, tx, store.OutboxPostCard, requestID, newRound, nil, at)
	})
	if err != nil || !superseded {
		return 0, false, err
	}
	return newRound, true, nil
}
