package store

import "time"

// Event is one entry of a request's append-only audit trail.
type Event struct {
	ID        int64
	RequestID string
	At        time.Time
	Actor     string
	Kind      EventKind
	Data      map[string]any
}

// EventKind names what an audit event records; values equal the SQL values
// (events.kind).
type EventKind string

// Event kinds. The Ledger picks each one from the transition it writes;
// approvals names the refusals it audits.
const (
	EventRequested   EventKind = "requested"
	EventVoted       EventKind = "voted"
	EventDecided     EventKind = "decided"
	EventCancelled   EventKind = "cancelled"
	EventExpired     EventKind = "expired"
	EventReminded    EventKind = "reminded"
	EventEscalated   EventKind = "escalated"
	EventClaimed     EventKind = "claimed"
	EventAttempt     EventKind = "attempt"  // a retryable attempt; the execution is ready again
	EventUnknown     EventKind = "unknown"  // the outcome is not known; it is verified
	EventVerified    EventKind = "verified" // verified not done; the execution is ready again
	EventResend      EventKind = "resend"   // resent under the same key without asking the provider
	EventSucceeded   EventKind = "succeeded"
	EventFailed      EventKind = "failed"
	EventNeedsReview EventKind = "needs_review"
	EventSuperseded  EventKind = "superseded"
	EventResolved    EventKind = "resolved"
	// EventEdited settles a request an approver edited: its data names
	// the edit (superseded_by) and the fields it changed.
	EventEdited EventKind = "edited"
	// EventDecisionRefused and EventResolutionRefused audit a person's
	// attempt that was not allowed.
	EventDecisionRefused   EventKind = "decision_refused"
	EventResolutionRefused EventKind = "resolution_refused"
)
