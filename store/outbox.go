package store

import "time"

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

// OutboxRow is one Slack delivery as the worker claims it.
type OutboxRow struct {
	ID        int64
	Kind      OutboxKind
	RequestID string
	Round     int
	Data      map[string]any
	Attempts  int // claims so far, this one included
	LastError string
	CreatedAt time.Time
}

// RetryOutboxParams puts delivery ID back for another try after Delay, on
// the database clock. Attempted says whether Slack was called this time; a
// delivery only postponed (its channel is paused, its card not posted yet)
// gives its claim back and keeps the last error of a real attempt.
type RetryOutboxParams struct {
	ID        int64
	Delay     time.Duration
	Reason    string
	Attempted bool
}
