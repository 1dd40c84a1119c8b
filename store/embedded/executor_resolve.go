package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/countersign/countersign/store"
)

// Resolve moves an execution out of needs_review with its audit event and
// card update. A move back to ready (a resend under the same key) raises the
// attempt cap to allow at least one more attempt. resolved is false when the
// execution exists but is not in needs_review; a missing execution is
// ErrNotFound.
func (s *Store) Resolve(ctx context.Context, p store.ResolveParams) (resolved bool, err error) {
	id, ok := canonicalID(p.RequestID)
	if !ok {
		return false, store.ErrNotFound
	}
	err = s.write(ctx, func(tx *writeTx) error {
		at := clock(p.Now)
		var (
			attempts   int
			decisionID int64
		)
		err := tx.QueryRowContext(ctx, `
UPDATE executions SET state = ?1,
	last_code = coalesce(nullif(?2, ''), last_code),
	max_attempts = CASE WHEN ?1 = 'ready' THEN max(max_attempts, attempts + 1) ELSE max_attempts END,
	next_attempt_at = ?3,
	updated_at = ?3
WHERE id = ?4 AND request_id = ?5 AND state = 'needs_review'
RETURNING attempts, decision_id`, string(p.To), p.Code, micros(at), p.ExecutionID, id).Scan(&attempts, &decisionID)
		if errors.Is(err, sql.ErrNoRows) {
			var exists bool
			if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM executions WHERE id = ? AND request_id = ?)`,
				p.ExecutionID, id).Scan(&exists); err != nil {
				return fmt.Errorf("resolving execution: %w", err)
			}
			if !exists {
				return store.ErrNotFound
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("resolving execution: %w", translate(err))
		}
		round, err := decisionRound(ctx, tx, decisionID)
		if err != nil {
			return err
		}
		resolved = true
		tx.executionMoved(id, string(p.To))
		if err := appendEvent(ctx, tx, id, at, p.By, "resolved", map[string]any{
			"execution_id": p.ExecutionID, "action": p.Action, "attempt": attempts, "state": p.To,
		}); err != nil {
			return err
		}
		return enqueueOutbox(ctx, tx, store.OutboxUpdateCard, id, round, nil, at)
	})
	if err != nil {
		return false, err
	}
	return resolved, nil
}
