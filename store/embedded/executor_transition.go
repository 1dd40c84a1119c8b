package embedded

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/countersign/countersign/store"
)

// TransitionExecutions applies a batch of transitions in one transaction:
// each row moves only if it is still in p.From with the attempt count the
// caller saw (and, when p.Worker is set, still held by p.Worker), and each
// move writes its audit event, its card update and, when asked, a thread
// reply. It returns the transitions that took effect.
// With p.AsyncCommit the commit does not wait for the disk (see transact).
func (s *Store) TransitionExecutions(ctx context.Context, p store.TransitionParams, ts []store.Transition) (applied []store.Applied, err error) {
	if len(ts) == 0 {
		return nil, nil
	}
	err = s.transact(ctx, !p.AsyncCommit, func(tx *writeTx) error {
		applied = nil
		now := clock(p.Now)
		for _, t := range ts {
			var (
				requestID  string
				decisionID int64
			)
			err := tx.QueryRowContext(ctx, `
UPDATE executions SET
	state = ?1,
	claimed_by = CASE WHEN ?1 = 'claimed' THEN claimed_by END,
	claim_expires_at = CASE WHEN ?1 = 'claimed' THEN claim_expires_at END,
	next_attempt_at = ?2 + ?3,
	response_status = coalesce(nullif(?4, 0), response_status),
	response_body = coalesce(?5, response_body),
	provider_ref = coalesce(nullif(?6, ''), provider_ref),
	last_code = nullif(?7, ''),
	last_error = nullif(?8, ''),
	updated_at = ?2
WHERE id = ?9 AND state = ?10 AND attempts = ?11 AND (?12 = '' OR claimed_by = ?12)
RETURNING request_id, decision_id`,
				string(t.To), micros(now), t.Delay.Microseconds(), t.Status, nullBytes(t.Body), t.ProviderRef,
				t.Code, t.Error, t.ExecutionID, string(p.From), t.Attempt, p.Worker).Scan(&requestID, &decisionID)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			if err != nil {
				return fmt.Errorf("recording outcomes: %w", translate(err))
			}
			round, err := decisionRound(ctx, tx, decisionID)
			if err != nil {
				return err
			}
			tx.executionMoved(requestID, string(t.To))
			if err := appendEvent(ctx, tx, requestID, now, p.Actor, t.Event, t.EventData); err != nil {
				return err
			}
			if err := enqueueOutbox(ctx, tx, store.OutboxUpdateCard, requestID, round, nil, now); err != nil {
				return err
			}
			if t.Reply != "" {
				if err := enqueueOutbox(ctx, tx, store.OutboxThreadReply, requestID, round, map[string]any{"reason": t.Reply}, now); err != nil {
					return err
				}
			}
			applied = append(applied, store.Applied{ExecutionID: t.ExecutionID, RequestID: requestID, Round: round})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return applied, nil
}
