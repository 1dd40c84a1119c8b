package embedded

import (
	"context"
	"fmt"
	"time"

	"github.com/countersign/countersign/store"
)

// enqueueOutbox writes a Slack delivery in the caller's transaction, so it
// exists exactly when the state change that needs it commits.
func enqueueOutbox(ctx context.Context, q querier, kind store.OutboxKind, requestID string, round int, data map[string]any, at time.Time) error {
	raw, err := encodeData(data)
	if err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, `INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at)
VALUES (?, ?, ?, ?, ?, ?)`, kind, requestID, round, raw, micros(at), micros(at)); err != nil {
		return fmt.Errorf("enqueueing %s: %w", kind, translate(err))
	}
	return nil
}

// EnqueueOutbox queues a Slack delivery; a zero at means the current clock.
func (s *Store) EnqueueOutbox(ctx context.Context, kind store.OutboxKind, requestID string, round int, data map[string]any, at time.Time) error {
	if at.IsZero() {
		at = clock(nil)
	}
	id, _ := canonicalID(requestID)
	return s.write(ctx, func(tx *writeTx) error {
		return enqueueOutbox(ctx, tx, kind, id, round, data, at)
	})
}
