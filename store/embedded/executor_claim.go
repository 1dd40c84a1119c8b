package embedded

import (
	"context"
	"fmt"
	"strings"

	"github.com/countersign/countersign/store"
)

// ClaimExecutions moves up to Limit due ready executions of the worker's
// tools to claimed, counting the attempt on the row and writing each claim's
// audit event and card update. The selection and the updates run in one
// IMMEDIATE transaction, so no other claimer (in this process or another)
// commits in between: a row is handed to one caller only.
func (s *Store) ClaimExecutions(ctx context.Context, p store.ClaimParams) (claims []store.Claim, err error) {
	if p.Limit <= 0 || len(p.ClaimTimeouts) == 0 {
		return nil, nil
	}
	tools := make([]any, 0, len(p.ClaimTimeouts))
	for name := range p.ClaimTimeouts {
		tools = append(tools, name)
	}
	err = s.write(ctx, func(tx *writeTx) error {
		claims = nil
		now := clock(p.Now)
		rows, err := tx.QueryContext(ctx, `SELECT id, tool FROM executions
WHERE state = 'ready' AND next_attempt_at <= ? AND tool IN (`+placeholders(len(tools))+`)
ORDER BY next_attempt_at LIMIT ?`, append(append([]any{micros(now)}, tools...), p.Limit)...)
		if err != nil {
			return fmt.Errorf("claiming executions: %w", err)
		}
		type due struct {
			id   int64
			tool string
		}
		dues, err := collect(rows, func(row scanner) (due, error) {
			var d due
			return d, row.Scan(&d.id, &d.tool)
		})
		if err != nil {
			return fmt.Errorf("claiming executions: %w", err)
		}
		for _, d := range dues {
			expires := now.Add(p.ClaimTimeouts[d.tool])
			e, err := scanExecution(tx.QueryRowContext(ctx, `
UPDATE executions SET state = 'claimed', claimed_by = ?, attempts = attempts + 1,
	claim_expires_at = ?, updated_at = ?
WHERE id = ? AND state = 'ready'
RETURNING `+executionColumns, p.Worker, micros(expires), micros(now), d.id))
			if err != nil {
				return fmt.Errorf("claiming execution %d: %w", d.id, err)
			}
			round, err := decisionRound(ctx, tx, e.DecisionID)
			if err != nil {
				return err
			}
			tx.executionMoved(e.RequestID, string(e.State))
			if err := appendEvent(ctx, tx, e.RequestID, now, "executor:"+p.Worker, "claimed", map[string]any{
				"attempt": e.Attempts, "execution_id": e.ID, "claim_expires_at": jsonTime(*e.ClaimExpiresAt),
			}); err != nil {
				return err
			}
			if err := enqueueOutbox(ctx, tx, store.OutboxUpdateCard, e.RequestID, round, nil, now); err != nil {
				return err
			}
			claims = append(claims, store.Claim{Execution: e, Round: round, DBNow: now})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return claims, nil
}

// placeholders returns n comma-separated parameter markers.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}
