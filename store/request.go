package store

import (
	"encoding/json"
	"slices"
	"time"
)

// RequestStatus is where a request stands in review; values equal the SQL values.
type RequestStatus string

// Request statuses.
const (
	RequestPending   RequestStatus = "pending"
	RequestApproved  RequestStatus = "approved"
	RequestRejected  RequestStatus = "rejected"
	RequestExpired   RequestStatus = "expired"
	RequestCancelled RequestStatus = "cancelled"
	// RequestEdited: an approver edited the effect and approved the edit,
	// which became a new request (SupersededBy); the original never runs.
	RequestEdited RequestStatus = "edited"
)

// Terminal reports whether no further review can happen in this round.
func (s RequestStatus) Terminal() bool { return s != RequestPending }

// What settles a request, written once: a status that settles it by itself,
// or approval with its latest execution in a final state. Statements that
// decide it in SQL take these as parameters (SettledRule).
var (
	settledStatuses = []RequestStatus{RequestRejected, RequestExpired, RequestCancelled, RequestEdited}
	settledStates   = []ExecState{ExecSucceeded, ExecFailed}
)

// Settled reports whether a request in status whose latest execution is in
// exec (empty when it has none) can no longer change its outcome: it was
// rejected, expired, cancelled or edited, or its execution succeeded or
// failed.
func Settled(status RequestStatus, exec ExecState) bool {
	if status == RequestApproved {
		return slices.Contains(settledStates, exec)
	}
	return slices.Contains(settledStatuses, status)
}

// SettledRule is Settled for a statement: a request is settled when its
// status is one of statuses, or approved with its latest execution in one
// of states.
func SettledRule() (statuses []RequestStatus, approved RequestStatus, states []ExecState) {
	return slices.Clone(settledStatuses), RequestApproved, slices.Clone(settledStates)
}

// Request is an agent's intended write as stored. Snapshot holds the exact
// canonical bytes of the effect that reviewers see and the executor sends.
type Request struct {
	ID           string
	Key          string
	BasisHash    string
	RunID        string
	Step         json.RawMessage
	Tool         string
	Snapshot     []byte
	PayloadHash  string
	Summary      string
	Reason       string
	RequestedBy  string
	RequestedFor string
	Status       RequestStatus
	Round        int
	ExpiresAt    time.Time
	CardSurface  string // the surface of its current round's first card, "" before one is posted
	CardRef      string // that surface's reference to the card
	CreatedAt    time.Time
	UpdatedAt    time.Time
	Policy       Policy
	// RoundStartedAt is when the current round began waiting for a
	// decision: CreatedAt for the first round.
	RoundStartedAt time.Time
	// Version grows with every change an agent can see in the request's
	// representation: its status and round (bumped by the request's own
	// transitions) and its execution's state, attempts and outcome (bumped
	// by the database as the execution moves). A new request is version 1.
	Version int64
	// Supersedes is the key of the request this one is an approver's edit
	// of, and SupersededBy the key of the edit that replaced this one;
	// both "" when there is none.
	Supersedes   string
	SupersededBy string
}

// NewRequest is what intake stores for a new key.
type NewRequest struct {
	Key          string
	BasisHash    string
	RunID        string
	Step         json.RawMessage
	Tool         string
	Snapshot     []byte
	PayloadHash  string
	Summary      string
	Reason       string
	RequestedBy  string
	RequestedFor string
	TTL          time.Duration
	Policy       Policy // frozen on the request; zero needs one approval from the tool's approvers
	Now          *time.Time
	// EffectStrings is EffectStrings(Snapshot); nil has it computed at insert.
	EffectStrings []string
	// Decided, when set, decides the request in the transaction that
	// stores it (a policy's allow or deny, a standing grant's approval).
	Decided *AutoDecision
	// Supersedes is set by Ledger.Edit (the edited request's key); intake
	// leaves it "".
	Supersedes string
}

// AutoDecision is a decision made at intake, by rule rather than by a
// reviewer: written with the request, in the same transaction.
type AutoDecision struct {
	Verdict     Verdict
	DecidedBy   string // "policy:<tier>" or "grant:<id>"
	Via         string // "policy" or "grant"
	Reason      string // a denial's message
	MaxAttempts int    // the execution's attempt cap, on approve
	// Card posts a card (without buttons: the request is decided) for the
	// decided request; false posts none.
	Card bool
	// Data is added to the decision's audit event (a grant's grantor).
	Data map[string]any
	// Grant is the id of the standing grant that approves, held live
	// until the transaction commits (Executor.HoldGrant). A grant that
	// ended since it was read decides nothing: the request is stored
	// undecided, its card posted, as if no grant had matched.
	Grant string
}

// InsertResult is the stored request for one NewRequest, and whether this
// call inserted it, or the tombstone its key left when it was pruned.
type InsertResult struct {
	Request
	Inserted bool
	// PostQueued is, for a key already stored, whether a card post for its
	// current round is queued (as ReplayRequest reports it), read with the
	// row so a replay needs no second read.
	PostQueued bool
	// Pruned, when set, is the tombstone of a key whose request was
	// pruned: nothing was inserted and Request is zero.
	Pruned *Tombstone `db:"-"`
}

// IsUUID reports whether s has the textual shape of a UUID, so a key is never
// sent to the database as an id.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
				return false
			}
		}
	}
	return true
}
