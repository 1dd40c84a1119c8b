package store

import "time"

// OutboxKind is what a delivery to a review surface does: post a round's
// card, update it, or reply in its thread. Values equal the SQL values.
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

// OutboxRow is one delivery to a review surface as the worker claims it.
// Surface names the surface it is for ("slack"); "" is every surface of the
// request's tool. Destination is where on the surface, when the row names
// it ("" is the tool's, or the card's).
type OutboxRow struct {
	ID          int64
	Kind        OutboxKind
	RequestID   string
	Round       int
	Surface     string
	Destination string
	Data        map[string]any
	Attempts    int // claims so far, this one included
	LastError   string
	CreatedAt   time.Time
}

// RetryOutboxParams puts delivery ID back for another try after Delay, on
// the database clock. Attempted says whether the surface was called this
// time; a delivery only postponed (its lane is paused, its card not posted yet)
// gives its claim back and keeps the last error of a real attempt.
type RetryOutboxParams struct {
	ID        int64
	Delay     time.Duration
	Reason    string
	Attempted bool
}
