package store

import (
	"slices"
	"time"
)

// ExecState is where an approved write stands; values equal the SQL values.
type ExecState string

// Execution states (see docs/STATES.md).
const (
	ExecReady       ExecState = "ready"
	ExecClaimed     ExecState = "claimed"
	ExecSucceeded   ExecState = "succeeded"
	ExecFailed      ExecState = "failed"
	ExecUnknown     ExecState = "unknown"
	ExecNeedsReview ExecState = "needs_review"
	ExecSuperseded  ExecState = "superseded"
)

// execStates is every execution state, for a rule that ranges over them.
var execStates = []ExecState{ExecReady, ExecClaimed, ExecSucceeded, ExecFailed, ExecUnknown, ExecNeedsReview, ExecSuperseded}

// Retired reports whether an execution in s will never run again: it
// succeeded or failed (store.Settled), or a new round superseded it. Every
// other execution is live. The statements and partial indexes that select
// the live ones list the retired states in SQL, where an index predicate
// must be a constant; TestLiveExecutionsAsInGo holds each list to this.
func (s ExecState) Retired() bool {
	return s == ExecSuperseded || slices.Contains(settledStates, s)
}

// Execution is the executor's record of one approved round of a request.
type Execution struct {
	ID             int64
	RequestID      string
	DecisionID     int64
	Key            string
	Tool           string
	Snapshot       []byte
	SnapshotHash   string
	State          ExecState
	Attempts       int
	MaxAttempts    int
	NextAttemptAt  time.Time
	ClaimedBy      *string
	ClaimExpiresAt *time.Time
	LastCode       *string
	LastError      *string
	ResponseStatus *int
	ResponseBody   []byte
	ProviderRef    *string
	ApprovedAt     time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	// VerifyFirst is set on an execution a restore may have hidden a send
	// of (MarkRestored): the provider is asked before it is sent.
	VerifyFirst bool
}

// Claim is an execution the caller now holds, with the round of the decision
// that approved it, the version of the policy frozen on its request, and the
// database clock at the moment of the claim.
type Claim struct {
	Execution
	Round int
	// PolicyVersion is the request's Policy.Version (empty on requests
	// stored before versions): the executor compares it with the tool's
	// policy now, and reads the request only when they differ.
	PolicyVersion string
	DBNow         time.Time
}

// LeaseUnknownsParams asks for up to Limit due unknown executions, leased
// for Lease from Now (nil: the database clock).
type LeaseUnknownsParams struct {
	Now   *time.Time
	Lease time.Duration
	Limit int
}

// ClaimParams says what a worker may claim and for how long.
type ClaimParams struct {
	Worker string
	Limit  int
	// ClaimTimeouts maps each tool the worker can dispatch to its claim
	// timeout; rows of other tools are left for a worker that knows them.
	ClaimTimeouts map[string]time.Duration
	Now           *time.Time
}

// ToolCount is how many rows a tool has in some state.
type ToolCount struct {
	Tool  string
	Count int
}

// Unknown is an execution leased for verification, with the database clock.
type Unknown struct {
	Execution
	DBNow time.Time
}

// RestoreParams describes a restore of the ledger, recorded by
// MarkRestored.
type RestoreParams struct {
	// Source names what was restored (a file, "postgres").
	Source string
	// Window is how long after the restore a new request may still be an
	// agent's replay of one the copy lost, and so verifies first too.
	Window time.Duration
	Now    *time.Time
}

// Restore is a recorded restore.
type Restore struct {
	ID         int64
	RestoredAt time.Time
	// GuardUntil ends the window: an execution of a request created before
	// it verifies before its first send.
	GuardUntil time.Time
	// Flagged is how many unsettled executions the restore flagged.
	Flagged int
}

// ResolveParams is a human's answer to an execution in needs_review.
type ResolveParams struct {
	RequestID   string
	ExecutionID int64
	To          ExecState // succeeded, failed or ready
	Code        string    // recorded as last_code; empty keeps the row's
	Action      string
	By          string
	Now         *time.Time
	// Grant and ClearVerifyFirst are set by the Ledger (callers leave them
	// zero): the attempts a resend allows past those used (the cap rises to
	// attempts + Grant when lower), and whether the row's verify_first flag
	// is cleared.
	Grant            int
	ClearVerifyFirst bool
}

// SupersedeParams names a claimed execution that must not run as approved.
type SupersedeParams struct {
	ExecutionID int64
	Attempt     int
	Worker      string
	Code        string // approval_expired, precondition_failed, policy_stricter
	Message     string
	// RequestTTL is how long the new round waits for a decision, at least.
	RequestTTL time.Duration
	Now        *time.Time
	// Policy, when set, is frozen on the new round in place of the
	// request's: the stricter policy in force that retired the approval.
	Policy *Policy
	// Denial, when set, decides the new round at once (a rejection by the
	// policy in force): no card is posted for it, and the request settles
	// instead of asking for review.
	Denial *AutoDecision
	// Data is added to the superseded event's data (the policy versions).
	Data map[string]any
}

// Transition moves one execution out of the state the caller holds it in,
// with what to record on the row and in its audit event's data. The Ledger
// picks the event's kind and the thread reply it owes from the move.
type Transition struct {
	ExecutionID int64
	// Attempt is the attempts value the caller saw. A row whose count moved on
	// (it was reclaimed) is not touched, so a stale worker never overwrites a
	// newer outcome.
	Attempt int
	To      ExecState
	// Status, Body and ProviderRef record the provider's last answer; zero
	// values keep what the row has.
	Status      int
	Body        []byte
	ProviderRef string
	// Code and Error replace last_code and last_error; empty clears them.
	Code  string
	Error string
	// Delay sets next_attempt_at to now plus Delay.
	Delay     time.Duration
	EventData map[string]any
	// Resend marks a move from unknown to ready that resends under the same
	// key without asking the provider (it honours keys), rather than after
	// the provider said it does not have the write.
	Resend bool
}

// TransitionParams names who moves the rows and from which state.
type TransitionParams struct {
	From ExecState
	// Worker, when set, must be the row's claimed_by (for From = claimed).
	Worker string
	Actor  string
	Now    *time.Time
	// AsyncCommit lets the commit return before it is durable. Only for
	// outcomes that can be verified later: a lost outcome leaves its claim to
	// expire and be reconciled like any other unknown.
	AsyncCommit bool
	// CallbackAgents is set by the Ledger (callers leave it nil): the agents
	// whose requests queue a callback when an execution settles or enters
	// needs_review, for the one-statement batch to do as the Ledger does.
	CallbackAgents []string
}

// Applied is a transition that took effect.
type Applied struct {
	ExecutionID int64
	RequestID   string
	Round       int
}
