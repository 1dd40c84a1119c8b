package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/countersign/countersign/store"
)

// ExpireClaims moves up to limit claims past their claim_expires_at to
// unknown, each with its audit event and card update, and returns how many
// moved. Only the provider can say whether such a claim's write was sent, so
// the row goes to verification, never straight back to ready.
func (s *Store) ExpireClaims(ctx context.Context, now *time.Time, limit int) (moved int, err error) {
	err = s.write(ctx, func(tx *writeTx) error {
		moved = 0
		at := clock(now)
		rows, err := tx.QueryContext(ctx, `SELECT id, request_id, decision_id, attempts, claimed_by FROM executions
WHERE state = 'claimed' AND claim_expires_at <= ? ORDER BY claim_expires_at LIMIT ?`, micros(at), limit)
		if err != nil {
			return fmt.Errorf("expiring claims: %w", err)
		}
		type expired struct {
			id, decisionID int64
			requestID      string
			attempts       int
			heldBy         string
		}
		due, err := collect(rows, func(row scanner) (expired, error) {
			var e expired
			return e, row.Scan(&e.id, &e.requestID, &e.decisionID, &e.attempts, &e.heldBy)
		})
		if err != nil {
			return fmt.Errorf("expiring claims: %w", err)
		}
		for _, e := range due {
			if _, err := tx.ExecContext(ctx, `
UPDATE executions SET state = 'unknown', claimed_by = NULL, claim_expires_at = NULL, next_attempt_at = ?1,
	last_code = 'claim_timeout', last_error = 'the claim expired before an outcome was recorded', updated_at = ?1
WHERE id = ?2`, micros(at), e.id); err != nil {
				return fmt.Errorf("expiring claim %d: %w", e.id, err)
			}
			round, err := decisionRound(ctx, tx, e.decisionID)
			if err != nil {
				return err
			}
			tx.executionMoved(e.requestID, string(store.ExecUnknown))
			if err := appendEvent(ctx, tx, e.requestID, at, "executor:reconciler", "unknown", map[string]any{
				"attempt": e.attempts, "execution_id": e.id, "code": "claim_timeout", "held_by": e.heldBy,
			}); err != nil {
				return err
			}
			if err := enqueueOutbox(ctx, tx, store.OutboxUpdateCard, e.requestID, round, nil, at); err != nil {
				return err
			}
			moved++
		}
		return nil
	})
	return moved, err
}

// LeaseUnknowns returns up to limit due unknown executions and pushes their
// next_attempt_at out by lease, so reconcilers running at once verify each
// row once per lease. A lease is not a state change: it writes no event.
func (s *Store) LeaseUnknowns(ctx context.Context, now *time.Time, lease time.Duration, limit int) (out []store.Unknown, err error) {
	err = s.write(ctx, func(tx *writeTx) error {
		at := clock(now)
		rows, err := tx.QueryContext(ctx, `
UPDATE executions SET next_attempt_at = ?1 + ?2
WHERE id IN (SELECT id FROM executions WHERE state = 'unknown' AND next_attempt_at <= ?1 ORDER BY next_attempt_at LIMIT ?3)
RETURNING `+executionColumns, micros(at), lease.Microseconds(), limit)
		if err != nil {
			return fmt.Errorf("leasing unknown executions: %w", err)
		}
		execs, err := collect(rows, scanExecution)
		if err != nil {
			return fmt.Errorf("leasing unknown executions: %w", err)
		}
		out = make([]store.Unknown, len(execs))
		for i, e := range execs {
			out[i] = store.Unknown{Execution: e, DBNow: at}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
