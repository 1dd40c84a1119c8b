package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// OutboxKind is what a Slack delivery does; values equal the SQL values.
type OutboxKind string

// Outbox kinds.
const (
	OutboxPostCard    OutboxKind = "post_card"
	OutboxUpdateCard  OutboxKind = "update_card"
	OutboxThreadReply OutboxKind = "thread_reply"
)

// OutboxState is where a delivery stands; values equal the SQL values.
type OutboxState string

// Outbox states.
const (
	OutboxPending   OutboxState = "pending"
	OutboxDelivered OutboxState = "delivered"
	OutboxFailed    OutboxState = "failed"
)

// EnqueueOutboxTx writes a Slack delivery in the caller's transaction, so it
// exists exactly when the state change that needs it commits. A zero at means
// the database clock.
func EnqueueOutboxTx(ctx context.Context, db DBTX, kind OutboxKind, requestID string, round int, data map[string]any, at time.Time) error {
	payload := []byte("{}")
	if data != nil {
		var err error
		if payload, err = json.Marshal(data); err != nil {
			return fmt.Errorf("encoding outbox data: %w", err)
		}
	}
	var atp *time.Time
	if !at.IsZero() {
		atp = &at
	}
	if _, err := db.Exec(ctx, `INSERT INTO outbox (kind, request_id, round, data, next_attempt_at, created_at)
VALUES ($1, $2, $3, $4, coalesce($5::timestamptz, now()), coalesce($5::timestamptz, now()))`,
		kind, requestID, round, payload, atp); err != nil {
		return fmt.Errorf("enqueueing %s: %w", kind, err)
	}
	return nil
}
