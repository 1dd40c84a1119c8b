package store

import "time"

// Verdict is a reviewer's answer; values equal the SQL values.
type Verdict string

// Verdicts.
const (
	VerdictApprove Verdict = "approve"
	VerdictReject  Verdict = "reject"
)

// Decision is the one verdict recorded for a request round.
type Decision struct {
	ID              int64
	RequestID       string
	Round           int
	Verdict         Verdict
	DecidedBy       string
	Via             string
	PayloadHashSeen string
	DecidedAt       time.Time
	Reason          string // the deciding reviewer's, if they gave one
}

// DecideParams describes a verdict to record.
type DecideParams struct {
	RequestID   string
	Round       int
	PayloadHash string // the hash the decider was shown
	Verdict     Verdict
	DecidedBy   string
	Via         string
	MaxAttempts int    // the execution's attempt cap, on approve
	Reason      string // why, in the reviewer's words (optional)
	Now         *time.Time
	// Grant, on an approval cast with Vote, also creates a standing grant
	// when this vote decides the round, in the same transaction.
	Grant *NewGrant

	// Set by the Ledger for a decision made at intake: data added to the
	// audit event, and no card update when the request has no card.
	data   map[string]any
	noCard bool
}
